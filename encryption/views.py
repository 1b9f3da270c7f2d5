"""Encryption pages: the encryption roots with lock and unlock, and a new encrypted dataset."""

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from appliance.choices import Role
from appliance.selectors import host_current
from appliance.web import add_service_errors, attempt, form_errors
from encryption import selectors, services
from encryption.forms import CreateForm, LockForm, UnlockForm


def encryption_list(request):
    host = host_current(request)
    roots = selectors.roots_overview(host=host)
    return render(
        request,
        "encryption/encryption_list.html",
        {
            "host": host,
            "roots": roots,
            "can_run": request.user.has_role(Role.OPERATOR),
            "unlock_form": UnlockForm(roots=[r["name"] for r in roots]),
        },
    )


@require_POST
def unlock(request):
    host = host_current(request)
    form = UnlockForm(request.POST, roots=[r["name"] for r in selectors.roots_overview(host=host)])
    if not form.is_valid():
        messages.error(request, form_errors(form))
        return redirect("encryption-list")
    op = attempt(request, services.unlock_start, host=host, user=request.user, **form.cleaned_data)
    return redirect("operation-detail", pk=op.pk) if op else redirect("encryption-list")


@require_POST
def lock(request):
    form = LockForm(request.POST)
    if not form.is_valid():
        messages.error(request, form_errors(form))
        return redirect("encryption-list")
    op = attempt(request, services.lock_start, host=host_current(request), user=request.user, **form.cleaned_data)
    return redirect("operation-detail", pk=op.pk) if op else redirect("encryption-list")


@require_http_methods(["GET", "POST"])
def create(request):
    form = CreateForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        data = {**form.cleaned_data, "volume_size": form.cleaned_data["volume_size"] or None}
        try:
            op = services.encrypted_create_start(host=host_current(request), user=request.user, **data)
            return redirect("operation-detail", pk=op.pk)
        except ValidationError as exc:
            add_service_errors(form, exc)
    return render(request, "encryption/encryption_create.html", {"form": form})
