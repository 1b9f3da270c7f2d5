"""Backups pages (admins only: a backup holds every secret Tarn keeps): the list with "back up now", the schedule and
an upload; a backup's page with its manifest, the dry run's diff and the restore."""

from django.core.exceptions import ValidationError
from django.core.files.uploadhandler import StopUpload, TemporaryFileUploadHandler
from django.http import FileResponse, Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.csrf import csrf_exempt, csrf_protect
from django.views.decorators.http import require_GET, require_POST

from appliance.auth import requires
from appliance.auth.fresh import fresh_factor, require_fresh
from appliance.choices import Role
from appliance.selectors import operation_refused
from appliance.web import add_service_errors, start_on_form
from backups import selectors, services
from backups.forms import BackupForm, CheckForm, DeleteForm, RestoreForm, ScheduleForm, UploadForm
from backups.models import Backup

ADMIN = {"write": Role.ADMIN, "read": Role.ADMIN}


def _list(request, status=200, **forms):
    plan = selectors.schedule()
    initial = {}
    if plan:
        initial = {
            k: getattr(plan, k) for k in ("enabled", "every", "weekday", "day", "hour", "keep", "include_series")
        }
        initial["push_host"] = plan.push_host_id
    context = {
        "backups": selectors.backup_list()[:200],
        "plan": plan,
        "operations": selectors.recent_operations(),
        "backup_form": forms.get("backup_form") or BackupForm(),
        "schedule_form": forms.get("schedule_form") or ScheduleForm(initial=initial),
        "upload_form": forms.get("upload_form") or UploadForm(),
        "max_upload": services.MAX_UPLOAD,
    }
    return render(request, "backups/backup_list.html", context, status=status)


@requires(**ADMIN)
@require_GET
def backup_list(request):
    return _list(request)


@requires(**ADMIN)
@require_POST
@fresh_factor  # the file holds Tarn's SSH key and its vault
def backup_now(request):
    form = BackupForm(request.POST)
    if form.is_valid():
        started = start_on_form(form, services.backup_start, user=request.user, **form.cleaned_data)
        if started:
            return started
    return _list(request, status=400, backup_form=form)


@requires(**ADMIN)
@require_POST
def schedule_save(request):
    form = ScheduleForm(request.POST)
    if form.is_valid():
        if form.cleaned_data.get("passphrase"):
            require_fresh(request)  # a new key for every scheduled backup
        try:
            services.schedule_save(**form.cleaned_data)
            return redirect("backup-list")
        except ValidationError as exc:
            add_service_errors(form, exc)
    return _list(request, status=400, schedule_form=form)


class LimitedUpload(TemporaryFileUploadHandler):
    """Stops reading an upload once it is larger than a backup can be (a body without a length, or one lying)."""

    def receive_data_chunk(self, raw_data, start):
        if start + len(raw_data) > services.MAX_UPLOAD:
            self.request.tarn_upload_too_large = True
            raise StopUpload(connection_reset=True)
        return super().receive_data_chunk(raw_data, start)


@requires(**ADMIN)
@require_POST
@csrf_exempt  # the upload handler must be set before anything reads the body; CSRF is checked just below
def upload(request):
    length = (
        int(request.META.get("CONTENT_LENGTH") or 0) if str(request.META.get("CONTENT_LENGTH", "")).isdigit() else 0
    )
    if length > services.MAX_UPLOAD + (1 << 20):  # refused before a byte of the body is read
        said = f"The upload is {length >> 20} MiB: a Tarn backup is at most {services.MAX_UPLOAD >> 20} MiB."
        return _list(request, status=413, upload_form=_refused(said))
    request.upload_handlers = [LimitedUpload(request)]
    return _upload(request)


def _refused(message: str) -> UploadForm:
    """The upload form showing why the file was refused (nothing of it was read or kept)."""
    form = UploadForm(data={}, files={})
    form.is_valid()
    form.errors["file"] = form.error_class([message])
    return form


@csrf_protect
def _upload(request):
    form = UploadForm(request.POST, request.FILES)
    if getattr(request, "tarn_upload_too_large", False):
        said = f"The upload is larger than {services.MAX_UPLOAD >> 20} MiB: not a Tarn backup."
        return _list(request, status=413, upload_form=_refused(said))
    if form.is_valid():
        f = form.cleaned_data["file"]
        try:
            backup = services.upload_save(user=request.user, chunks=f.chunks(), size=f.size)
            return redirect("backup-detail", pk=backup.pk)
        except ValidationError as exc:
            add_service_errors(form, exc)
    return _list(request, status=400, upload_form=form)


def _detail(request, backup, status=200, **forms):
    context = {
        "backup": backup,
        "check_form": forms.get("check_form") or CheckForm(),
        "restore_form": forms.get("restore_form") or RestoreForm(),
        "delete_form": forms.get("delete_form") or DeleteForm(),
        "checked": backup.checked or None,
        "operations": selectors.recent_operations(),
        # a wrong passphrase is found by the worker: said again here, at the form that asked
        "check_refused": operation_refused(kinds=["backups.check"], backup=backup.pk),
        "restore_refused": operation_refused(kinds=["backups.restore"], backup=backup.pk),
    }
    return render(request, "backups/backup_detail.html", context, status=status)


@requires(**ADMIN)
@require_GET
def backup_detail(request, pk):
    return _detail(request, get_object_or_404(Backup, pk=pk))


def _act(request, pk, form_class, key: str, start, **extra):
    """A form on a backup's page that starts an operation: valid and accepted → the operation's page; else the page
    again, the error on its field."""
    backup = get_object_or_404(Backup, pk=pk)
    form = form_class(request.POST)
    if form.is_valid():
        started = start_on_form(form, start, backup=backup, user=request.user, **form.cleaned_data, **extra)
        if started:
            return started
    return _detail(request, backup, status=400, **{key: form})


@requires(**ADMIN)
@require_POST
@fresh_factor
def check(request, pk):
    return _act(request, pk, CheckForm, "check_form", services.backup_restore_start, dry_run=True)


@requires(**ADMIN)
@require_POST
@fresh_factor
def restore(request, pk):
    return _act(request, pk, RestoreForm, "restore_form", services.backup_restore_start, dry_run=False)


@requires(**ADMIN)
@require_POST
def delete(request, pk):
    return _act(request, pk, DeleteForm, "delete_form", services.backup_delete_start)


@requires(**ADMIN)
@require_GET
@fresh_factor
def download(request, pk):
    backup = get_object_or_404(Backup, pk=pk)
    try:
        fh = services.download(backup)
    except ValidationError as exc:
        raise Http404(" ".join(exc.messages)) from None
    return FileResponse(fh, as_attachment=True, filename=backup.name, content_type="application/octet-stream")
