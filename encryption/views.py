"""Encryption pages: the encryption roots with lock and unlock, and a new encrypted dataset."""

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from appliance.auth import requires
from appliance.auth.fresh import fresh_factor
from appliance.choices import Role
from appliance.selectors import host_current, operation_refused
from appliance.web import add_service_errors, attempt, form_errors, start_on_form, start_or_back
from encryption import selectors, services
from encryption.forms import ChangeKeyForm, CreateForm, ExportForm, LockForm, RetiredRemoveForm, UnlockForm


def encryption_list(request, **bound):
    """The roots with their forms; `bound` holds a form posted with errors (unlock_form, change_form or
    export_form), shown again open with each error under its field (400)."""
    host = host_current(request)
    roots = selectors.roots_overview(host=host)
    forms = {
        "unlock_form": UnlockForm(roots={r["name"]: r["encryption"].get("format") for r in roots}),
        "change_form": ChangeKeyForm(
            roots={r["name"]: r["encryption"].get("format") for r in roots if not r["locked"]}
        ),
        "export_form": ExportForm(roots=[r["name"] for r in roots]),
    }
    return render(
        request,
        "encryption/encryption_list.html",
        {
            "host": host,
            "roots": roots,
            "can_run": request.user.has_role(Role.OPERATOR),
            **forms,
            **bound,
            "exports": selectors.exports(host=host, user=request.user) if request.user.has_role(Role.ADMIN) else [],
            "retired": selectors.retired_keys(host=host) if request.user.has_role(Role.ADMIN) else [],
            "is_admin": request.user.has_role(Role.ADMIN),
            # what the host refused (a wrong passphrase or key), shown again at the form that asked
            "unlock_refused": operation_refused(kinds=["encryption.unlock"], host=host),
            "change_refused": operation_refused(kinds=["encryption.change_key"], host=host),
        },
        status=400 if bound else 200,
    )


MAX_EXPORT_BYTES = 1 << 20


@require_POST
def unlock(request):
    form = UnlockForm(request.POST, request.FILES, roots=_roots(request))
    if not form.is_valid():
        return encryption_list(request, unlock_form=form)
    d = dict(form.cleaned_data)
    upload = d.pop("key_file")
    passphrase = d.pop("key_file_passphrase")
    if upload:
        try:
            d["keys"] = services.keys_from_export(data=upload.read(MAX_EXPORT_BYTES), passphrase=passphrase or "")
        except ValidationError as exc:
            add_service_errors(form, exc)
            return encryption_list(request, unlock_form=form)
    return _start(request, form, services.unlock_start, "unlock_form", data=d)


@require_POST
def lock(request):
    """A row's button: a refusal is a message on the list (there is no form to show again)."""
    form = LockForm(request.POST)
    if not form.is_valid():
        messages.error(request, form_errors(form))
        return redirect("encryption-list")
    return start_or_back(
        request, services.lock_start, "encryption-list", host=host_current(request), **form.cleaned_data
    )


@require_http_methods(["GET", "POST"])
def create(request):
    form = CreateForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        data = {**form.cleaned_data, "volume_size": form.cleaned_data["volume_size"] or None}
        started = start_on_form(
            form, services.encrypted_create_start, host=host_current(request), user=request.user, **data
        )
        if started:
            return started
    return render(request, "encryption/encryption_create.html", {"form": form})


@requires(write=Role.ADMIN)
@require_POST
def change_key(request):
    return _start(request, ChangeKeyForm(request.POST, roots=_roots(request)), services.change_key_start, "change_form")


@requires(write=Role.ADMIN, read=Role.ADMIN)
@require_POST
def retired_remove(request, pk):
    key = get_object_or_404(selectors.retired_keys(host=host_current(request)), pk=pk)
    form = RetiredRemoveForm(request.POST)
    if not form.is_valid():
        messages.error(request, form_errors(form))
        return redirect("encryption-list")
    return start_or_back(request, services.retired_key_remove_start, "encryption-list", key=key, **form.cleaned_data)


@requires(write=Role.ADMIN, read=Role.ADMIN)
@require_POST
@fresh_factor
def export(request):
    return _start(request, ExportForm(request.POST, roots=_roots(request)), services.keys_export_start, "export_form")


@requires(write=Role.ADMIN, read=Role.ADMIN)
@require_POST
@fresh_factor
def export_download(request, pk):
    export = get_object_or_404(selectors.exports(host=host_current(request), user=request.user), pk=pk)
    taken = attempt(request, services.key_export_take, export=export)
    if taken is None:
        return redirect("encryption-list")
    name, data = taken
    response = HttpResponse(data, content_type="application/octet-stream")
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


def _roots(request) -> dict[str, str]:
    """{encryption root: its keyformat} on the current host."""
    return selectors.key_formats(host=host_current(request))


def _start(request, form, service, name: str, data: dict | None = None):
    """A posted form of the list page (`name`) into an operation; with errors, its own or the service's, the list
    page shows it again open with each error under its field. data: the values to pass, if not the form's own."""
    if form.is_valid():
        kwargs = {"host": host_current(request), **(form.cleaned_data if data is None else data)}
        started = start_on_form(form, service, user=request.user, **kwargs)
        if started:
            return started
    return encryption_list(request, **{name: form})
