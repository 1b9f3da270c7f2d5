"""The permissions page: a dataset's folders as a lazy tree (one folder listed at a time), the chosen folder's ACL in
an editor with the raw getfacl text beside it and what a chosen user may do there; a change to one folder is an
Operation, a change to everything inside is counted first (the walk's page) and then applied or stopped. Reading is
anyone's; changing is an admin's."""

import csv
import io

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST

from appliance.auth import requires
from appliance.choices import Role
from appliance.selectors import host_current
from appliance.web import add_service_errors, attempt, operation_page, start_or_back, started_or_form
from permissions import selectors
from permissions.choices import TEMPLATES, Template, WalkStatus
from permissions.forms import (
    AclForm,
    EffectiveForm,
    EntryFormSet,
    PlaceForm,
    ProjectForm,
    QuotaFilter,
    QuotaForm,
    entries_of,
    initial_from,
)
from permissions.models import AclWalk
from permissions.services import (
    acl_set_start,
    effective_for,
    folder_children,
    folder_read,
    place,
    project_assign_start,
    quota_set_start,
    quotas_read_start,
    walk_apply_start,
    walk_count_start,
    walk_stop,
)


def _where(request, host, data):
    """The folder the request names (the host's first mounted filesystem when it names none), or (None, error)."""
    form = PlaceForm(data)
    if not form.is_valid():
        names = selectors.mounted_names(host=host) if host else []
        if not names:
            return None, ""
        form = PlaceForm({"dataset": names[0], "path": ""})
        form.is_valid()
    try:
        return place(host=host, **form.cleaned_data), ""
    except ValidationError as exc:
        return None, " ".join(exc.messages)


def _page(request, status=200, acl_form=None, entries=None):
    host = host_current(request)
    data = request.POST if request.method == "POST" else request.GET
    where, problem = _where(request, host, data) if host else (None, "")
    folder = listing = None
    if where:
        try:
            folder = folder_read(where=where)
            listing = folder_children(where=where)
        except ValidationError as exc:
            problem = " ".join(exc.messages)
    if folder and acl_form is None:
        values, rows = initial_from(folder, request.GET.get("template", ""))
        acl_form = AclForm(initial={"dataset": where.dataset, "path": where.path, **values})
        entries = EntryFormSet(initial=rows, prefix="entries")
    context = {
        "host": host,
        "datasets": selectors.mounted_names(host=host) if host else [],
        "where": where,
        "crumbs": _crumbs(where) if where else [],
        "folder": folder,
        "listing": listing,
        "problem": problem,
        "acl_form": acl_form,
        "entries": entries,
        "effective_form": EffectiveForm(),
        "templates": Template.choices,
        "template_values": TEMPLATES,
        "can_admin": request.user.has_role(Role.ADMIN),
        "walks": selectors.recent_walks(host=host) if host else [],
    }
    return render(request, "permissions/permissions_page.html", context, status=status)


def _crumbs(where) -> list[tuple[str, str]]:
    crumbs = [(where.dataset, "")]
    for n, part in enumerate(where.parts):
        crumbs.append((part, "/".join(where.parts[: n + 1])))
    return crumbs


@require_GET
def permissions_page(request):
    return _page(request)


@require_GET
def permissions_tree(request):
    """One folder's subfolders, for the tree to open lazily (htmx)."""
    host = host_current(request)
    where, problem = _where(request, host, request.GET) if host else (None, "No host.")
    listing = None
    if where:
        try:
            listing = folder_children(where=where)
        except ValidationError as exc:
            problem = " ".join(exc.messages)
    return render(request, "permissions/_tree.html", {"where": where, "listing": listing, "problem": problem})


@require_GET
def permissions_effective(request):
    """What a user may do in the folder, and why (htmx)."""
    host = host_current(request)
    where, problem = _where(request, host, request.GET) if host else (None, "No host.")
    form = EffectiveForm(request.GET)
    said = None
    if where and form.is_valid():
        try:
            said = effective_for(where=where, folder=folder_read(where=where), username=form.cleaned_data["user"])
        except ValidationError as exc:
            add_service_errors(form, exc)
    return render(
        request, "permissions/_effective.html", {"form": form, "said": said, "problem": problem, "where": where}
    )


@requires(write=Role.ADMIN)
@require_POST
def permissions_apply(request):
    """One folder now (an Operation), or everything inside after a count (the walk's page)."""
    form = AclForm(request.POST)
    entries = EntryFormSet(request.POST, prefix="entries")
    if form.is_valid() and entries.is_valid():
        rows, index = entries_of(entries)
        c = form.cleaned_data
        start = walk_count_start if c["recursive"] else acl_set_start
        kwargs = {"dataset": c["dataset"], "path": c["path"], "spec": form.spec(rows), "confirm": c["confirm"]}
        try:
            started = start(host=host_current(request), user=request.user, **kwargs)
        except ValidationError as exc:
            _errors_on(form, entries, index, exc)
        else:
            return redirect(started) if isinstance(started, AclWalk) else operation_page(started)
    return _page(request, status=400, acl_form=form, entries=entries)


def _errors_on(form, entries, index, exc: ValidationError) -> None:
    """The service's errors on their fields: entries-N-field on the formset's row N said it, the rest on the form."""
    rest = {}
    for key, errors in getattr(exc, "message_dict", {"__all__": exc.messages}).items():
        head, _, tail = key.partition("-")
        if head == "entries" and tail[:1].isdigit():
            n, _, field = tail.partition("-")
            row = entries.forms[index[int(n)]] if int(n) < len(index) else None
            if row is not None and field in row.fields:
                row.add_error(field, errors)
                continue
        rest[key] = errors
    if rest:
        add_service_errors(form, ValidationError(rest))


@require_GET
def walk_detail(request, pk):
    walk = get_object_or_404(AclWalk.objects.select_related("host", "count_operation", "apply_operation"), pk=pk)
    running = walk.status in (WalkStatus.COUNTING, WalkStatus.APPLYING)
    context = {"walk": walk, "running": running, "can_admin": request.user.has_role(Role.ADMIN)}
    if request.htmx and request.htmx.target == "walk":
        response = render(request, "permissions/aclwalk_detail.html#walk", context)
        if not running:
            response.status_code = 286  # htmx: stop polling
        return response
    return render(request, "permissions/aclwalk_detail.html", context)


@requires(write=Role.ADMIN)
@require_POST
def walk_apply(request, pk):
    """The go-ahead after a preview: the walk's page follows the apply."""
    walk = get_object_or_404(AclWalk, pk=pk)
    attempt(request, walk_apply_start, walk=walk, user=request.user, confirm=request.POST.get("confirm", ""))
    return redirect(walk)


@requires(write=Role.ADMIN)
@require_POST
def walk_stop_view(request, pk):
    walk = get_object_or_404(AclWalk, pk=pk)
    try:
        walk_stop(walk=walk, user=request.user)
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
    else:
        messages.info(request, "Asked to stop: it stops between two files; what is done stays done.")
    return redirect(walk)


# --- quotas --------------------------------------------------------------------------------------------------------


def _quota_page(request, status=200, quota_form=None, project_form=None):
    host = host_current(request)
    search = QuotaFilter(request.GET)
    search.is_valid()
    kind, query = search.cleaned_data.get("kind") or "", search.cleaned_data.get("q") or ""
    account = request.GET.get("account", "")
    kept = request.GET.copy()
    kept.pop("page", None)
    chart_of = account.partition(":") if ":" in account else None
    context = {
        "host": host,
        "search": search,
        "reading": selectors.quota_reading(host=host) if host else None,
        "uses": selectors.quota_page(host=host, kind=kind, query=query, page=request.GET.get("page", 1))
        if host
        else None,
        "chart": selectors.quota_chart(host=host, kind=chart_of[0], name=chart_of[2]) if host and chart_of else None,
        "account": chart_of,
        "pager_query": kept.urlencode(),
        "datasets": selectors.filesystem_names(host=host) if host else [],
        "quota_form": quota_form or QuotaForm(),
        "project_form": project_form or ProjectForm(),
        "can_admin": request.user.has_role(Role.ADMIN),
        "can_run": request.user.has_role(Role.OPERATOR),
    }
    return render(request, "permissions/quota_page.html", context, status=status)


@require_GET
def quota_page(request):
    return _quota_page(request)


@require_GET
def quota_csv(request):
    """The usage report as CSV (every row of the filter, not one page), streamed."""
    host = host_current(request)
    search = QuotaFilter(request.GET)
    search.is_valid()
    rows = (
        selectors.quota_uses(
            host=host, kind=search.cleaned_data.get("kind") or "", query=search.cleaned_data.get("q") or ""
        )
        if host
        else []
    )
    response = StreamingHttpResponse(_csv_lines(host, rows), content_type="text/csv")
    response["Content-Disposition"] = f'attachment; filename="quotas-{host.name if host else "none"}.csv"'
    return response


def _csv_lines(host, rows):
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(
        ["host", "dataset", "kind", "name", "used_bytes", "quota_bytes", "percent", "files", "files_quota", "read_at"]
    )
    yield out.getvalue()
    for u in rows.iterator(chunk_size=2000) if host else []:
        out.seek(0)
        out.truncate()
        name = "'" + u.name if u.name[:1] in "=+-@" else u.name  # a spreadsheet never reads a name as a formula
        writer.writerow(
            [
                host.name,
                u.dataset,
                u.kind,
                name,
                u.used,
                u.quota or "",
                u.share if u.share is not None else "",
                u.objused,
                u.objquota or "",
                u.read_at.isoformat(),
            ]
        )
        yield out.getvalue()


@requires(write=Role.ADMIN)
@require_POST
def quota_set(request):
    return started_or_form(request, QuotaForm(request.POST), quota_set_start, _quota_page, "quota_form")


@requires(write=Role.ADMIN)
@require_POST
def quota_project(request):
    return started_or_form(request, ProjectForm(request.POST), project_assign_start, _quota_page, "project_form")


@require_POST
def quota_refresh(request):
    return start_or_back(request, quotas_read_start, "quota-page", host=host_current(request))
