"""Recovery pages: pick a filesystem and one of its snapshots, walk its folders (the live folder compared), and see
a file's versions. Operators and admins only: file names are data a viewer does not see."""

from django.core.exceptions import ValidationError
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from appliance.auth import requires
from appliance.choices import Role
from appliance.selectors import host_current
from appliance.web import attempt, operation_page, start_on_form
from recovery import selectors, services
from recovery.choices import PAGE, VERSIONS_PASS
from recovery.forms import BrowseForm, ChangesForm, RestoreForm, VersionsForm
from recovery.models import Restore
from recovery.web import streamed


def _refusal(exc: ValidationError) -> dict[str, str]:
    return {k: "; ".join(v) for k, v in exc.message_dict.items()}


def _form_errors(form) -> dict[str, str]:
    return {k: "; ".join(v) for k, v in form.errors.items()}


@requires(read=Role.OPERATOR)
def browse(request):
    """No dataset: the filesystems to pick; a dataset: its snapshots; a snapshot (or "live"): one folder's page."""
    host = host_current(request)
    form = BrowseForm(request.GET)
    context = {"host": host, "filesystems": selectors.browsable(host=host), "errors": {}}
    data = form.cleaned_data if form.is_valid() else {}
    if not form.is_valid():
        context["errors"] = _form_errors(form)
    dataset = data.get("dataset", "")
    if host and dataset:
        try:
            where = services.where(host=host, dataset=dataset, snapshot=data.get("snapshot", ""),
                                   path=data.get("path", ""))  # fmt: skip
            context["where"] = where
            context["snapshots"] = selectors.snapshot_page(dataset=where.dataset, page=request.GET.get("snapshots"))
            context["restores"] = selectors.recent_restores(host=host, dataset=where.dataset.name)
            if where.snapshot or "live" in request.GET:
                page = services.folder_page(where=where, page=data.get("page") or 1)
                context["listing"] = page
                context["pages"] = _pages(page.total, data.get("page") or 1)
        except ValidationError as exc:
            context["errors"] = _refusal(exc)
    status = 400 if context["errors"] else 200
    return render(request, "recovery/browse.html", context, status=status)


@require_http_methods(["GET"])
@requires(read=Role.OPERATOR)
def download(request):
    host = host_current(request)
    form = BrowseForm(request.GET)
    data = form.cleaned_data if form.is_valid() else {}
    try:
        where = services.where(host=host, dataset=data.get("dataset", ""), snapshot=data.get("snapshot", ""),
                               path=data.get("path", ""))  # fmt: skip
        return streamed(services.download(where=where, user=request.user))
    except ValidationError as exc:
        context = {"host": host, "errors": _refusal(exc), "filesystems": selectors.browsable(host=host)}
        return render(request, "recovery/browse.html", context, status=400)


def _pages(total: int, number: int) -> dict:
    """A page of PAGE entries out of total: its number, the last, and its neighbours (None at the ends)."""
    last = max(1, (total + PAGE - 1) // PAGE)
    return {"number": number, "last": last, "previous": number - 1 if number > 1 else None,
            "next": number + 1 if number < last else None}  # fmt: skip


@requires(read=Role.OPERATOR)
def file_versions(request):
    """A file's (or folder's) versions across the dataset's snapshots, a pass at a time."""
    host = host_current(request)
    form = VersionsForm(request.GET)
    context = {"host": host, "errors": {}, "form": form}
    if not form.is_valid():
        context["errors"] = _form_errors(form)
    elif host:
        data = form.cleaned_data
        try:
            where = services.where(host=host, dataset=data["dataset"], path=data["path"])
            context["where"] = where
            context["found"] = services.versions(where=where, offset=data.get("offset") or 0,
                                                 limit=data.get("limit") or VERSIONS_PASS)  # fmt: skip
            context["limit"] = data.get("limit") or VERSIONS_PASS
        except ValidationError as exc:
            context["errors"] = _refusal(exc)
    status = 400 if context["errors"] else 200
    return render(request, "recovery/versions.html", context, status=status)


def _restore_started(**kwargs):
    return services.restore_start(**kwargs).operation


@require_http_methods(["GET", "POST"])
@requires(read=Role.OPERATOR)
def restore_page(request):
    """What a restore of this file or folder would do (the live copy beside the snapshot's), and the form: beside
    (the default) or in place with its name typed. Posted: the operation's page, or the form again with its errors."""
    host = host_current(request)
    form = RestoreForm(request.POST if request.method == "POST" else request.GET)
    context = {"host": host, "errors": {}, "form": form}
    valid = form.is_valid()
    data = form.cleaned_data if valid else {}
    if not valid and request.method == "GET":
        form = RestoreForm(initial={k: request.GET.get(k, "") for k in ("dataset", "snapshot", "path")})
        context["form"] = form
        data = {k: request.GET.get(k, "") for k in ("dataset", "snapshot", "path")}
    try:
        where = services.where(host=host, dataset=data.get("dataset", ""), snapshot=data.get("snapshot", ""),
                               path=data.get("path", ""))  # fmt: skip
        context["where"] = where
        if not where.parts or not where.snapshot:
            raise ValidationError({"path": "Pick a file or folder inside a snapshot."})
        context["entry"] = services.entry_of(where=where)
    except ValidationError as exc:
        context["errors"] = _refusal(exc)
        return render(request, "recovery/restore.html", context, status=400)
    if request.method == "POST" and valid:
        started = start_on_form(form, _restore_started, host=host, user=request.user, dataset=data["dataset"],
                                snapshot=data["snapshot"], path=data["path"], how=data["how"],
                                confirm=data.get("confirm", ""))  # fmt: skip
        if started:
            return started
    status = 400 if request.method == "POST" else 200
    return render(request, "recovery/restore.html", context, status=status)


@require_POST
@requires(read=Role.OPERATOR)
def restore_stop(request, pk):
    row = get_object_or_404(Restore, pk=pk, host=host_current(request))
    attempt(request, services.restore_stop, restore=row, user=request.user)
    return operation_page(row.operation) if row.operation_id else redirect("recovery-browse")


@require_http_methods(["GET"])
@requires(read=Role.OPERATOR)
def changes(request):
    """What changed in the dataset (under the folder) between two snapshots, or since one: counts and a page."""
    host = host_current(request)
    form = ChangesForm(request.GET)
    context = {"host": host, "errors": {}, "form": form}
    if not form.is_valid():
        context["errors"] = _form_errors(form)
    elif host:
        data = form.cleaned_data
        try:
            where = services.where(host=host, dataset=data["dataset"], path=data.get("path", ""))
            rows, found = services.changes(where=where, since=data["since"], to=data.get("to", ""),
                                           page=data.get("page") or 1)  # fmt: skip
            context.update(where=where, rows=rows, found=found, since=data["since"], to=data.get("to", ""),
                           pages=_pages(found.matched, data.get("page") or 1))  # fmt: skip
        except ValidationError as exc:
            context["errors"] = _refusal(exc)
    return render(request, "recovery/changes.html", context, status=400 if context["errors"] else 200)
