"""{% audit_rows entries show_params %}: the Audit page's table rows, drawn in Python (issue 46: the template's ~40 nodes a
row were most of a page's ~30 ms of CPU, and 50 clients reading the log made the two cores wait)."""

from pprint import pformat

from django import template
from django.utils.html import escape
from django.utils.safestring import mark_safe
from django.utils.timezone import localtime

from appliance.web import operation_href

register = template.Library()


def _who(e) -> str:
    who = escape(e.username or "–")
    if e.auth != "token":
        return who
    number = f" #{int(e.token_id)}" if e.token_id else ""
    return f'{who} <small title="API token {e.token_id}">(token{number})</small>'


def _what(e, show_params: bool, operation_url) -> str:
    if e.kind == "command":
        return f"<code>{escape(' '.join(map(str, e.argv or [])))}</code>"
    what = f"{escape(e.method)} {escape(e.path)}"
    if e.params and show_params:
        what += f'<details class="params"><summary>parameters</summary><pre>{escape(pformat(e.params))}</pre></details>'
    if e.operation_id:
        what += f' → <a href="{operation_url(e.operation_id)}">operation {int(e.operation_id)}</a>'
    return what


@register.simple_tag
def audit_rows(entries, show_params: bool):
    """A <tr> an entry: when, who (and the API token), what (the command, or the request, its parameters for admins and
    the operation it started), the host, the result and how long it took."""
    operation_url = operation_href()
    rows = []
    for e in entries:
        at = localtime(e.at)
        result = f"exit {escape(e.exit_code)}" if e.kind == "command" else escape(e.status_code)
        took = f"{int(e.duration_ms)} ms" if e.duration_ms is not None else ""
        rows.append(
            f'<tr><td title="{at.isoformat()}">{at:%Y-%m-%d %H:%M:%S}</td><td>{_who(e)}</td>'
            f"<td>{_what(e, show_params, operation_url)}</td><td>{escape(e.host_name or '–')}</td>"
            f"<td>{result}</td><td>{took}</td></tr>"
        )
    return mark_safe("\n".join(rows))  # noqa: S308 - every value above is escaped
