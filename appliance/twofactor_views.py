"""Two-factor pages: the second step of signing in (a code, a recovery code or a passkey), a passkey alone for an
admin who chose it, the account's second factors, the confirmation a secret step asks for (appliance.auth.fresh:
a second factor, or the password for a user who has none), and the admins' page (which roles must have one; a user's
reset). A half-signed-in session ends after MISSES wrong answers: the password is asked again."""

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
from appliance.auth.fresh import fresh_factor, is_fresh, mark_fresh, require_fresh
from appliance.choices import Role
from appliance.forms import CodeForm, PasskeyLoginForm, PasswordForm, PolicyForm, ResetForm
from appliance.models import User
from appliance.web import add_service_errors, client_address, safe_next

PENDING, VERIFIED = "tarn_2fa_pending", "tarn_2fa_at"
PENDING_SECONDS = 300
MISSES = 5  # wrong answers a half-signed-in session may give before the password is asked again
BACKEND = "django.contrib.auth.backends.ModelBackend"


def enrolment(view):
    """Open to a signed-in user who must still set up a second factor (LoginAndRoleMiddleware sends them here)."""
    view.tarn_enrolment = True
    return view


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
    mark_fresh(request)
    services.login_succeeded(username=user.username, address=client_address(request))
    return nxt


def _missed(request) -> bool:
    """Count a wrong answer of the half-signed-in session; True (and the session no longer half signed in) once it
    gave MISSES: whoever it is types the password again."""
    saved = request.session.get(PENDING)
    if not saved:
        return True
    saved["missed"] = saved.get("missed", 0) + 1
    if saved["missed"] >= MISSES:
        request.session.pop(PENDING, None)
        return True
    request.session[PENDING] = saved
    return False


AGAIN = "Too many wrong answers: sign in again with your password."


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
        if not services.login_attempt_allowed(username=user.username, address=client_address(request)):
            form.add_error(None, "Too many failed attempts. Wait a few minutes and try again.")
            return _verify_page(request, user, form, 429)
        if form.is_valid():
            try:
                twofactor.verify_code(user=user, **form.cleaned_data)
                return redirect(_signed_in(request, user))
            except ValidationError as exc:
                add_service_errors(form, exc)
        if _missed(request):
            messages.error(request, " ".join([*form.errors.get(twofactor.FIELD, []), AGAIN]))
            return redirect("login")
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
    if not services.login_attempt_allowed(username=name, address=client_address(request)):
        return JsonResponse({"errors": {"credential": ["Too many failed attempts. Wait a few minutes."]}}, status=429)
    try:
        credential, _ = twofactor.credential_from(request.body)
        signed = twofactor.passkey_verify(request=request, credential=credential, user=user)
    except ValidationError as exc:
        if user is not None and _missed(request):
            return JsonResponse({"errors": {"credential": [AGAIN]}, "next": "/login/"}, status=400)
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
@fresh_factor  # a second factor changes only with a fresh one, the first with the password (a stolen session adds none)
def totp(request):
    action = request.POST.get("action", "")
    if action == "begin":
        try:
            twofactor.totp_begin(user=request.user)
        except ValidationError as exc:
            messages.error(request, " ".join(exc.messages))
        return redirect("two-factor")
    if action == "remove":
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
    require_fresh(request)
    return render(request, "appliance/recovery_codes.html", {"codes": twofactor.recovery_codes_new(user=request.user)})


@enrolment
@requires(write=Role.VIEWER)
@require_POST
def passkey_options(request):
    if not is_fresh(request):
        return JsonResponse({"errors": {"credential": [FRESH_NEEDED]}}, status=403)
    return JsonResponse({"options": twofactor.passkey_register_options(request=request, user=request.user)})


@enrolment
@requires(write=Role.VIEWER)
@require_POST
def passkey_add(request):
    """The new key; with a first factor, its recovery codes in this answer (the page's script shows them): shown
    once, never kept but as hashes."""
    if not is_fresh(request):
        return JsonResponse({"errors": {"credential": [FRESH_NEEDED]}}, status=403)
    try:
        credential, name = twofactor.credential_from(request.body)
        key, codes = twofactor.passkey_register(request=request, user=request.user, name=name, credential=credential)
    except ValidationError as exc:
        return JsonResponse({"errors": exc.message_dict}, status=400)
    return JsonResponse({"next": "/account/two-factor/", "name": key.name, "codes": codes})


@enrolment
@requires(write=Role.VIEWER)
@require_POST
@fresh_factor
def passkey_remove(request, pk):
    twofactor.passkey_remove(user=request.user, pk=pk)
    messages.success(request, "The key is removed: it no longer signs you in.")
    return redirect("two-factor")


@requires(write=Role.VIEWER)
@require_POST
@fresh_factor
def passkey_login(request):
    """Passkey-only sign-in on (the password typed: sign-in stops asking for it) or off."""
    form = PasskeyLoginForm(request.POST)
    on = form.is_valid() and form.cleaned_data["passkey_login"]
    if on and not _attempt_allowed(request):
        messages.error(request, TOO_MANY)
    elif form.is_valid():
        try:
            twofactor.passkey_login_set(user=request.user, enabled=on, password=form.cleaned_data["password"])
            messages.success(request, "Passkey-only sign-in is " + ("on." if on else "off."))
        except ValidationError as exc:
            messages.error(request, " ".join(exc.messages))
    return redirect("two-factor")


# --- the confirmation a secret step asks for (appliance.auth.fresh) ---------------------------------------------

FRESH_NEEDED = "Confirm it is you first (Two-factor → Confirm): changing a second factor needs a fresh confirmation."
TOO_MANY = "Too many failed attempts. Wait a few minutes and try again."


def _attempt_allowed(request) -> bool:
    return services.login_attempt_allowed(username=request.user.username, address=client_address(request))


@enrolment  # a user who must still set up a factor confirms with the password before adding one
@requires(write=Role.VIEWER)
@require_http_methods(["GET", "POST"])
def confirm(request):
    """A second factor (or, with none, the password) typed again: it counts for five minutes."""
    nxt = safe_next(request, request.GET.get("next"), "/account/two-factor/")
    factor = twofactor.has_second_factor(request.user)
    form = (CodeForm if factor else PasswordForm)(request.POST or None)
    status = 200
    if request.method == "POST":
        if not _attempt_allowed(request):
            form.add_error(None, TOO_MANY)
            return _confirm_page(request, form, nxt, 429)
        if form.is_valid():
            try:
                if factor:
                    twofactor.verify_code(user=request.user, **form.cleaned_data)
                    request.session[VERIFIED] = time.time()
                else:
                    twofactor.password_check(user=request.user, **form.cleaned_data)
                mark_fresh(request)
                services.login_succeeded(username=request.user.username, address=client_address(request))
                return redirect(nxt)
            except ValidationError as exc:
                add_service_errors(form, exc)
        status = 400
    return _confirm_page(request, form, nxt, status)


def _confirm_page(request, form, nxt, status):
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
    mark_fresh(request)
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
        if set(twofactor.policy().required_roles) - set(form.cleaned_data["required_roles"]):
            require_fresh(request)  # a role no longer required: what a stolen session would do first
        twofactor.policy_save(**form.cleaned_data)
        messages.success(request, "Saved: users of those roles set up a second factor at their next page.")
        return redirect("two-factor-admin")
    return _admin_page(request, status=400, policy_form=form)


@requires(write=Role.ADMIN, read=Role.ADMIN)
@require_POST
@fresh_factor
def reset(request, pk):
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
