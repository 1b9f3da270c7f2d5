"""Two-factor pages: the second step of signing in (a code, a recovery code or a passkey), a passkey alone for an
admin who chose it, the account's second factors, a fresh confirmation before a sensitive step (an API token), and
the admins' page (which roles must have one; a user's reset)."""

import time

from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.decorators import login_not_required
from django.core.exceptions import ValidationError
from django.http import JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from appliance import services, twofactor
from appliance.auth import requires
from appliance.choices import Role
from appliance.forms import CodeForm, PasskeyLoginForm, PolicyForm, ResetForm
from appliance.models import User
from appliance.web import add_service_errors, safe_next

PENDING, VERIFIED = "tarn_2fa_pending", "tarn_2fa_at"
PENDING_SECONDS = 300
BACKEND = "django.contrib.auth.backends.ModelBackend"


def enrolment(view):
    """Open to a signed-in user who must still set up a second factor (LoginAndRoleMiddleware sends them here)."""
    view.tarn_enrolment = True
    return view


def _address(request):
    return request.META.get("REMOTE_ADDR")


def begin_second_step(request, user, nxt: str):
    """After the password: remember who is half signed in (five minutes), and ask for the second factor."""
    request.session[PENDING] = {"user": user.pk, "at": time.time(), "next": nxt}
    return redirect("login-verify")


def _pending(request) -> User | None:
    saved = request.session.get(PENDING)
    if not saved or time.time() - saved["at"] > PENDING_SECONDS:
        request.session.pop(PENDING, None)
        return None
    return User.objects.filter(pk=saved["user"], is_active=True).first()


def _signed_in(request, user):
    nxt = (request.session.pop(PENDING, None) or {}).get("next") or "/"
    login(request, user, backend=BACKEND)
    request.session[VERIFIED] = time.time()
    services.login_succeeded(username=user.username, address=_address(request))
    return nxt


@login_not_required
@require_http_methods(["GET", "POST"])
def login_verify(request):
    user = _pending(request)
    if user is None:
        messages.error(request, "Sign in again: the second step waits five minutes.")
        return redirect("login")
    form = CodeForm(request.POST or None)
    status = 200
    if request.method == "POST":
        if not services.login_attempt_allowed(username=user.username, address=_address(request)):
            form.add_error(None, "Too many failed attempts. Wait a few minutes and try again.")
            return _verify_page(request, user, form, 429)
        if form.is_valid():
            try:
                twofactor.verify_code(user=user, **form.cleaned_data)
                return redirect(_signed_in(request, user))
            except ValidationError as exc:
                add_service_errors(form, exc)
        status = 400
    return _verify_page(request, user, form, status)


def _verify_page(request, user, form, status):
    context = {"form": form, "has_totp": twofactor.status(user)["totp"], "has_passkeys": user.passkeys.exists()}
    return render(request, "appliance/login_verify.html", context, status=status)


@login_not_required
@require_POST
def login_passkey_options(request):
    """WebAuthn options to sign in: the half-signed-in user's keys, or (no one pending) any passkey."""
    user = _pending(request)
    return JsonResponse({"options": twofactor.passkey_login_options(request=request, user=user)})


@login_not_required
@require_POST
def login_passkey(request):
    user = _pending(request)
    name = user.username if user else "(passkey)"
    if not services.login_attempt_allowed(username=name, address=_address(request)):
        return JsonResponse({"errors": {"credential": ["Too many failed attempts. Wait a few minutes."]}}, status=429)
    try:
        credential, _ = twofactor.credential_from(request.body)
        signed = twofactor.passkey_verify(request=request, credential=credential, user=user)
    except ValidationError as exc:
        return JsonResponse({"errors": exc.message_dict}, status=400)
    return JsonResponse({"next": safe_next(request, _signed_in(request, signed), "/")})


# --- the account's second factors ----------------------------------------------------------------------------


def _account(request, status=200, **extra):
    me = request.user
    pending = twofactor.totp_pending(user=me)
    context = {
        "state": twofactor.status(me),
        "pending": pending,
        "code_form": extra.pop("code_form", None) or CodeForm(),
        "passkey_form": PasskeyLoginForm(initial={"passkey_login": me.passkey_login}),
        "is_admin": me.has_role(Role.ADMIN),
        **extra,
    }
    return render(request, "appliance/two_factor.html", context, status=status)


@enrolment
@requires(write=Role.VIEWER)
@require_http_methods(["GET"])
def account(request):
    return _account(request)


@enrolment
@requires(write=Role.VIEWER)
@require_POST
def totp(request):
    action = request.POST.get("action", "")
    if twofactor.has_second_factor(request.user) and not fresh(request):
        return _ask_fresh(request)  # a second factor changes only with a fresh one (a stolen session adds none)
    if action == "begin":
        try:
            twofactor.totp_begin(user=request.user)
        except ValidationError as exc:
            messages.error(request, " ".join(exc.messages))
        return redirect("two-factor")
    if action == "remove":
        if not fresh(request):
            return _ask_fresh(request)
        twofactor.totp_remove(user=request.user)
        messages.success(request, "The authenticator app is removed.")
        return redirect("two-factor")
    form = CodeForm(request.POST)
    if form.is_valid():
        try:
            codes = twofactor.totp_confirm(user=request.user, **form.cleaned_data)
            messages.success(request, "The authenticator app is set up.")
            return _codes_or_back(request, codes)
        except ValidationError as exc:
            add_service_errors(form, exc)
    return _account(request, status=400, code_form=form)


def _codes_or_back(request, codes):
    if codes:
        return render(request, "appliance/recovery_codes.html", {"codes": codes})
    return redirect(request.session.pop("tarn_2fa_next", None) or "two-factor")


@enrolment
@requires(write=Role.VIEWER)
@require_POST
def recovery_codes(request):
    if not twofactor.has_second_factor(request.user):
        messages.error(request, "Set up an authenticator app or a passkey first.")
        return redirect("two-factor")
    if not fresh(request):
        return _ask_fresh(request)
    return render(request, "appliance/recovery_codes.html", {"codes": twofactor.recovery_codes_new(user=request.user)})


@enrolment
@requires(write=Role.VIEWER)
@require_POST
def passkey_options(request):
    if twofactor.has_second_factor(request.user) and not fresh(request):
        return JsonResponse({"errors": {"credential": [FRESH_NEEDED]}}, status=403)
    return JsonResponse({"options": twofactor.passkey_register_options(request=request, user=request.user)})


@enrolment
@requires(write=Role.VIEWER)
@require_POST
def passkey_add(request):
    if twofactor.has_second_factor(request.user) and not fresh(request):
        return JsonResponse({"errors": {"credential": [FRESH_NEEDED]}}, status=403)
    try:
        credential, name = twofactor.credential_from(request.body)
        key, codes = twofactor.passkey_register(request=request, user=request.user, name=name, credential=credential)
    except ValidationError as exc:
        return JsonResponse({"errors": exc.message_dict}, status=400)
    if codes:
        request.session["tarn_new_codes"] = codes  # shown once by the page the script goes to next
    return JsonResponse({"next": "/account/two-factor/codes/" if codes else "/account/two-factor/", "name": key.name})


@enrolment
@requires(write=Role.VIEWER)
@require_http_methods(["GET"])
def new_codes(request):
    codes = request.session.pop("tarn_new_codes", None)
    if not codes:
        return redirect("two-factor")
    return render(request, "appliance/recovery_codes.html", {"codes": codes})


@enrolment
@requires(write=Role.VIEWER)
@require_POST
def passkey_remove(request, pk):
    if not fresh(request):
        return _ask_fresh(request)
    twofactor.passkey_remove(user=request.user, pk=pk)
    messages.success(request, "The key is removed: it no longer signs you in.")
    return redirect("two-factor")


@requires(write=Role.VIEWER)
@require_POST
def passkey_login(request):
    if not fresh(request):
        return _ask_fresh(request)
    form = PasskeyLoginForm(request.POST)
    if form.is_valid():
        try:
            twofactor.passkey_login_set(user=request.user, enabled=form.cleaned_data["passkey_login"])
            return redirect("two-factor")
        except ValidationError as exc:
            messages.error(request, " ".join(exc.messages))
    return redirect("two-factor")


# --- a fresh second factor before a sensitive step -------------------------------------------------------------


def fresh(request) -> bool:
    """No second factor to ask for, or one given within the last five minutes."""
    at = request.session.get(VERIFIED)
    return (at and time.time() - at <= twofactor.FRESH_SECONDS) or not twofactor.has_second_factor(request.user)


FRESH_NEEDED = "Confirm it is you first (Two-factor → Confirm): changing a second factor needs a fresh one."


def _ask_fresh(request):
    messages.error(request, "Confirm with your second factor first (it counts for five minutes), then do it again.")
    return redirect("/account/two-factor/confirm/?next=/account/two-factor/")


@requires(write=Role.VIEWER)
@require_http_methods(["GET", "POST"])
def confirm(request):
    nxt = safe_next(request, request.GET.get("next"), "/account/two-factor/")
    form = CodeForm(request.POST or None)
    status = 200
    if request.method == "POST":
        if not services.login_attempt_allowed(username=request.user.username, address=_address(request)):
            form.add_error(None, "Too many failed attempts. Wait a few minutes and try again.")
            return render(request, "appliance/two_factor_confirm.html", {"form": form, "next": nxt}, status=429)
        if form.is_valid():
            try:
                twofactor.verify_code(user=request.user, **form.cleaned_data)
                request.session[VERIFIED] = time.time()
                services.login_succeeded(username=request.user.username, address=_address(request))
                return redirect(nxt)
            except ValidationError as exc:
                add_service_errors(form, exc)
        status = 400
    context = {"form": form, "next": nxt, "has_passkeys": request.user.passkeys.exists()}
    return render(request, "appliance/two_factor_confirm.html", context, status=status)


@requires(write=Role.VIEWER)
@require_POST
def confirm_passkey_options(request):
    return JsonResponse({"options": twofactor.passkey_login_options(request=request, user=request.user)})


@requires(write=Role.VIEWER)
@require_POST
def confirm_passkey(request):
    try:
        credential, _ = twofactor.credential_from(request.body)
        twofactor.passkey_verify(request=request, credential=credential, user=request.user)
    except ValidationError as exc:
        return JsonResponse({"errors": exc.message_dict}, status=400)
    request.session[VERIFIED] = time.time()
    return JsonResponse({"next": safe_next(request, request.GET.get("next"), "/account/two-factor/")})


# --- admins ----------------------------------------------------------------------------------------------------


def _admin_page(request, status=200, **forms):
    context = {
        "users": twofactor.users_overview(),
        "policy_form": forms.get("policy_form")
        or PolicyForm(initial={"required_roles": twofactor.policy().required_roles}),
        "reset_form": forms.get("reset_form") or ResetForm(),
        "reset_user": forms.get("reset_user"),
    }
    return render(request, "appliance/two_factor_admin.html", context, status=status)


@requires(write=Role.ADMIN, read=Role.ADMIN)
@require_http_methods(["GET"])
def admin(request):
    return _admin_page(request)


@requires(write=Role.ADMIN, read=Role.ADMIN)
@require_POST
def policy(request):
    form = PolicyForm(request.POST)
    if form.is_valid():
        twofactor.policy_save(**form.cleaned_data)
        messages.success(request, "Saved: users of those roles set up a second factor at their next page.")
        return redirect("two-factor-admin")
    return _admin_page(request, status=400, policy_form=form)


@requires(write=Role.ADMIN, read=Role.ADMIN)
@require_POST
def reset(request, pk):
    if not fresh(request):
        return _ask_fresh(request)
    target = get_object_or_404(User, pk=pk)
    form = ResetForm(request.POST)
    if form.is_valid():
        try:
            twofactor.reset(target=target, **form.cleaned_data)
            messages.success(request, f"{target.username}'s second factors are removed.")
            return redirect("two-factor-admin")
        except ValidationError as exc:
            add_service_errors(form, exc)
    return _admin_page(request, status=400, reset_form=form, reset_user=target)
