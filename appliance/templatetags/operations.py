"""An operation in words on a page: {{ op|operation_title }}, {{ op|operation_back }} -> (label, url) or None, and
{% operation_rows ops %}: the table rows of a list of operations (the Operations page, the dashboard, a host's page
and each app's recent operations)."""

from django import template
from django.utils.html import escape
from django.utils.safestring import mark_safe
from django.utils.timezone import localtime

from appliance import titles
from appliance.choices import OperationStatus
from appliance.web import operation_href

register = template.Library()

_MONTHS = ("", "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_STATUS = {value: escape(label) for value, label in OperationStatus.choices}
MESSAGE_CHARS = 80


@register.filter
def operation_title(op) -> str:
    return titles.operation_title(op)


@register.filter
def operation_back(op):
    return titles.operation_back(op)


def _message(text: str) -> str:
    return text if len(text) <= MESSAGE_CHARS else text[: MESSAGE_CHARS - 1] + "…"


@register.simple_tag
def operation_rows(ops):
    """A <tr> an operation: its title linked to its page, target, status, message (80 characters), who and when.
    Drawn here rather than by a template included per row: a page of 50 rows cost ~30 ms of CPU that way, which is what
    50 clients reloading the Operations page made the two cores wait for (issue 46)."""
    href = operation_href()
    rows = []
    for op in ops:
        status = op.status
        when = localtime(op.created_at)
        user = op.user.username if op.user_id else "system"
        rows.append(
            f'<tr><td><a href="{href(op.pk)}">{escape(titles.operation_title(op))}</a></td>'
            f"<td>{escape(op.target)}</td>"
            f'<td><span class="badge badge-{escape(status)}">{_STATUS.get(status) or escape(status)}</span></td>'
            f"<td>{escape(_message(op.message or ''))}</td><td>{escape(user)}</td>"
            f'<td title="{when.isoformat()}">{_MONTHS[when.month]} {when.day}, {when:%H:%M}</td></tr>'
        )
    return mark_safe("\n".join(rows))  # noqa: S308 - every value above is escaped
