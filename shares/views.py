"""Share pages: SMB shares, NFS exports, server settings, Samba users and who is connected."""

from django.contrib import messages
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from appliance.auth import requires
from appliance.choices import Role
from appliance.selectors import host_current
from appliance.web import host_object, host_object_or_404, start_on_form, start_or_back
from pools.selectors import filesystem_names_on
from shares import selectors, services
from shares.forms import NfsExportForm, SambaUserForm, ShareFolderForm, ShareSettingsForm, SmbShareForm
from shares.models import NfsExport, SmbShare


def share_list(request, *, status: int = 200, settings_form=None, user_form=None):
    """The shares page; settings_form, user_form: the server settings or a new Samba user as posted and refused,
    shown again open with each error under its field."""
    host = host_current(request)
    if settings_form is None and host:
        settings_form = ShareSettingsForm(instance=selectors.share_settings(host=host))
    return render(
        request,
        "shares/share_list.html",
        {
            "host": host,
            **(selectors.share_overview(host=host) if host else {}),
            "user_form": user_form or SambaUserForm(),
            "can_change": request.user.has_role(Role.OPERATOR),
            "is_admin": request.user.has_role(Role.ADMIN),
            "settings_form": settings_form,
        },
        status=status,
    )


def _share_form(request, form_class, row, save, template, extra=None, status=200):
    """A share's form: a new one on the current host, or `row` on its own host (the switcher follows it); posted and
    refused (its own errors or the service's), shown again with each under its field (400). save None: the page
    only, the share's form unbound as on GET (another form of the page was posted: extra holds it)."""
    host = row.host if row else host_current(request)
    posted = request.method == "POST" and save is not None
    form = form_class((request.POST or None) if posted else None, instance=row, datasets=filesystem_names_on(host=host))
    if posted and form.is_valid():
        data = {k: v for k, v in form.cleaned_data.items() if k in form._meta.fields}
        pk = row.pk if row else None
        started = start_on_form(form, save, host=host, user=request.user, data=data, pk=pk, **form.service_args())
        if started:
            return started
    context = {"host": host, "form": form, "row": row, **(extra or {})}
    return render(request, template, context, status=400 if posted else status)


def _share(request, model, pk):
    return host_object_or_404(request, model.objects.select_related("host"), pk=pk) if pk else None


@require_http_methods(["GET", "POST"])
def smb_share_form(request, pk=None, *, folder_form=None):
    """An SMB share's page; folder_form: the folder's owner and mode as posted and refused, shown again under the
    share's form with each error under its field (400)."""
    row = _share(request, SmbShare, pk)
    folder = folder_form
    if folder is None and row and request.user.has_role(Role.ADMIN):
        folder = ShareFolderForm(accounts=selectors.share_folder_accounts(host=row.host))
    refused = folder_form is not None
    save = None if refused else services.smb_share_save_start
    template = "shares/smb_share_form.html"
    return _share_form(request, SmbShareForm, row, save, template, {"folder_form": folder}, 400 if refused else 200)


@requires(write=Role.ADMIN)
@require_POST
def smb_share_folder(request, pk):
    row = _share(request, SmbShare, pk)
    form = ShareFolderForm(request.POST, accounts=selectors.share_folder_accounts(host=row.host))
    if form.is_valid():
        start = services.smb_share_folder_start
        started = start_on_form(form, start, host=row.host, user=request.user, pk=pk, **form.cleaned_data)
        if started:
            return started
    return smb_share_form(request, pk, folder_form=form)


@require_http_methods(["GET", "POST"])
def nfs_export_form(request, pk=None):
    row = _share(request, NfsExport, pk)
    return _share_form(request, NfsExportForm, row, services.nfs_export_save_start, "shares/nfs_export_form.html")


def _delete(request, model, start, pk):
    """Remove a share or export on its own host; one already gone is the service's message, not a 404."""
    row = host_object(request, model.objects.select_related("host"), pk=pk)
    host = row.host if row else host_current(request)
    return start_or_back(request, start, "share-list", host=host, pk=pk, confirm=request.POST.get("confirm", ""))


@require_POST
def smb_share_delete(request, pk):
    return _delete(request, SmbShare, services.smb_share_delete_start, pk)


@require_POST
def nfs_export_delete(request, pk):
    return _delete(request, NfsExport, services.nfs_export_delete_start, pk)


@requires(write=Role.ADMIN)
@require_POST
def share_settings(request):
    host = host_current(request)
    form = ShareSettingsForm(request.POST, instance=selectors.share_settings(host=host))
    if form.is_valid():
        started = start_on_form(
            form, services.share_settings_save_start, host=host, user=request.user, data=form.cleaned_data
        )
        if started:
            return started
    return share_list(request, status=400, settings_form=form)


@requires(write=Role.ADMIN)
@require_POST
def samba_user_add(request):
    """The page's form for a new Samba user: refused (its own check or the service's), shown again with the error
    under its field (400); the password typed is never sent back."""
    form = SambaUserForm(request.POST)
    if form.is_valid():
        kwargs = {"host": host_current(request), "user": request.user, "action": "add", **form.cleaned_data}
        started = start_on_form(form, services.samba_user_start, **kwargs)
        if started:
            return started
    return share_list(request, status=400, user_form=form)


@requires(write=Role.ADMIN)
@require_POST
def samba_user(request):
    """A Samba user's row buttons (password, enable, disable, delete with the name typed): a refusal is a message.
    A new user comes only through the Add user form (samba_user_add), which stays open when refused."""
    action = request.POST.get("action", "")
    if action not in services.SAMBA_USER_ROW_ACTIONS:
        messages.error(
            request, "A user's row can change the password, enable, disable or delete; add a user with the form."
        )
        return redirect("share-list")
    return start_or_back(
        request,
        services.samba_user_start,
        "share-list",
        host=host_current(request),
        action=action,
        username=request.POST.get("username", "").strip(),
        password=request.POST.get("password", ""),
        confirm=request.POST.get("confirm", ""),
    )


@require_POST
def share_status(request):
    return start_or_back(request, services.share_status_start, "share-list", host=host_current(request))
