"""Second factors: an authenticator app (TOTP, pyotp), passkeys and security keys (WebAuthn, the `webauthn` package),
and ten one-time recovery codes; which roles must have one; an admin's reset.

Libraries: pyotp is the maintained TOTP/HOTP implementation of the field (RFC 4226/6238); segno draws the QR code
here as SVG (no image service, no CDN); `webauthn` (Duo Labs' py_webauthn) verifies registrations and assertions
(origin, RP ID, challenge, signature, counter). What is Tarn's own: a code is taken once (the newest accepted time
step is kept and a step at or below it is refused, race-safe in one UPDATE), codes are plain ASCII digits only, the
TOTP secret is sealed at rest (Fernet, key derived by HKDF from the install's secret key: the web must verify codes
and cannot read the vault), recovery codes are kept as SHA-256 only, and the codes typed for one account are counted
whatever the address or session: CODE_TRIES wrong ones within an hour lock its codes for an hour (a recovery code or
a passkey still signs in; analytics raises an alert while the lock holds)."""

import base64
import hashlib
import hmac
import json
import re
import secrets
import time
from datetime import timedelta

import pyotp
import segno
from cryptography.fernet import Fernet, InvalidToken
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Count
from django.utils import timezone
from webauthn import (
    generate_authentication_options,
    generate_registration_options,
    options_to_json,
    verify_authentication_response,
    verify_registration_response,
)
from webauthn.helpers import base64url_to_bytes, bytes_to_base64url
from webauthn.helpers.exceptions import WebAuthnException
from webauthn.helpers.structs import (
    AuthenticatorSelectionCriteria,
    PublicKeyCredentialDescriptor,
    ResidentKeyRequirement,
    UserVerificationRequirement,
)

from appliance.checks import confirmed
from appliance.choices import AuditKind, Role
from appliance.models import AuditEntry, Passkey, RecoveryCode, TotpDevice, TwoFactorPolicy, User
from appliance.validators import no_bidi

ISSUER = "Tarn"
STEP = 30
DIGITS = re.compile(r"[0-9]{6}")
RECOVERY = re.compile(r"[a-z2-7]{5}-?[a-z2-7]{5}")
RECOVERY_COUNT = 10
CHALLENGE_SECONDS = 300
FIELD = "otp_token"  # the form field: named so the audit masks it (appliance.audit.redact: "token")
CODE_TRIES = 10  # authenticator codes typed for one account within CODE_WINDOW, none accepted, before the lock
CODE_WINDOW = CODE_LOCK = timedelta(hours=1)
NAME_MAX = 60
CREDENTIAL_ID = re.compile(r"[A-Za-z0-9_-]{1,1400}")  # base64url, as browsers send a credential's id


# --- sealing -----------------------------------------------------------------------------------------------------


def _fernet() -> Fernet:
    key = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=b"tarn-totp").derive(settings.SECRET_KEY.encode())
    return Fernet(base64.urlsafe_b64encode(key))


def _seal(secret: str) -> str:
    return _fernet().encrypt(secret.encode()).decode()


def _unseal(sealed: str) -> str:
    try:
        return _fernet().decrypt(sealed.encode()).decode()
    except InvalidToken:
        raise ValidationError(
            {
                FIELD: "This authenticator app was set up under another secret key (a restored backup?): ask an admin "
                "to reset your second factor."
            }
        ) from None


# --- reads -------------------------------------------------------------------------------------------------------


def has_second_factor(user) -> bool:
    return TotpDevice.objects.filter(user=user, confirmed_at__isnull=False).exists() or user.passkeys.exists()


def policy() -> TwoFactorPolicy:
    return TwoFactorPolicy.objects.first() or TwoFactorPolicy(required_roles=[])


def required_for(user) -> bool:
    """Must this user have a second factor (their role is one the admins require it for)?"""
    role = Role.ADMIN if user.is_superuser else user.role
    return role in policy().required_roles


def enrolment_due(request) -> bool:
    """A signed-in browser session whose user must have a second factor and has none yet (nor signed in with one)."""
    if request.session.get("tarn_2fa_at"):
        return False
    return required_for(request.user) and not has_second_factor(request.user)


def status(user) -> dict:
    device = TotpDevice.objects.filter(user=user).first()
    return {
        "totp": bool(device and device.confirmed_at),
        "totp_pending": bool(device and not device.confirmed_at),
        "passkeys": list(user.passkeys.all()),
        "recovery_left": RecoveryCode.objects.filter(user=user, used_at__isnull=True).count(),
        "required": required_for(user),
    }


def users_overview() -> list[dict]:
    totp = set(TotpDevice.objects.filter(confirmed_at__isnull=False).values_list("user_id", flat=True))
    keys = dict(Passkey.objects.values("user_id").annotate(n=Count("id")).values_list("user_id", "n"))
    required = set(policy().required_roles)
    return [
        {
            "user": u,
            "totp": u.pk in totp,
            "passkeys": keys.get(u.pk, 0),
            "required": (Role.ADMIN if u.is_superuser else u.role) in required,
        }
        for u in User.objects.order_by("username")
    ]


# --- codes -------------------------------------------------------------------------------------------------------


def clean_code(raw: str) -> str:
    """A code as typed: ASCII spaces and dashes around or between groups are dropped; anything else must be the 6
    ASCII digits of an authenticator code or a recovery code (letters a-z, 2-7). Other scripts' digits are refused,
    never converted."""
    code = raw.replace(" ", "").strip().lower()
    if DIGITS.fullmatch(code) or RECOVERY.fullmatch(code):
        return code.replace("-", "")
    if code and not code.isascii():
        raise ValidationError({FIELD: "Type the code with the digits 0-9 (and letters a-z for a recovery code)."})
    raise ValidationError({FIELD: "A code is 6 digits from your authenticator app, or a recovery code (xxxxx-xxxxx)."})


def totp_begin(*, user) -> tuple[str, str, str]:
    """A new (unconfirmed) authenticator for user: (secret shown once, otpauth URI, QR code as inline SVG). A
    confirmed one is replaced only once the new one is confirmed."""
    if TotpDevice.objects.filter(user=user, confirmed_at__isnull=False).exists():
        raise ValidationError("An authenticator app is already set up: remove it first to set up another.")
    secret = pyotp.random_base32()
    TotpDevice.objects.update_or_create(user=user, defaults={"sealed_secret": _seal(secret), "last_step": 0})
    return secret, *_qr(user, secret)


def totp_pending(*, user) -> tuple[str, str, str] | None:
    device = TotpDevice.objects.filter(user=user, confirmed_at__isnull=True).first()
    if device is None:
        return None
    try:
        secret = _unseal(device.sealed_secret)
    except ValidationError:  # sealed under another secret key (a restore): start the set-up again
        device.delete()
        return None
    return secret, *_qr(user, secret)


def _qr(user, secret: str) -> tuple[str, str]:
    uri = pyotp.TOTP(secret).provisioning_uri(name=user.username, issuer_name=ISSUER)
    return uri, segno.make(uri, error="m").svg_inline(scale=5, dark="#111", light="#fff")


def _accept_totp(device: TotpDevice, code: str, now: float | None = None) -> None:
    """The code matches a step within ±1 of now and newer than the last accepted: taken (once); else refused."""
    now = time.time() if now is None else now
    totp, current = pyotp.TOTP(_unseal(device.sealed_secret)), int(now // STEP)
    for step in (current, current - 1, current + 1):
        if hmac.compare_digest(totp.generate_otp(step), code):
            taken = TotpDevice.objects.filter(pk=device.pk, last_step__lt=step).update(last_step=step)
            if not taken:
                raise ValidationError({FIELD: "This code was already used: wait for the next one."})
            return
    raise ValidationError({FIELD: "Wrong or expired code: check your device's clock, then type the current code."})


def totp_confirm(*, user, otp_token: str, now: float | None = None) -> list[str]:
    """Confirm the pending authenticator with a code from it; returns new recovery codes when the user had none."""
    code = clean_code(otp_token)
    device = TotpDevice.objects.filter(user=user, confirmed_at__isnull=True).first()
    if device is None:
        raise ValidationError({FIELD: "Set up the authenticator app first (scan the code)."})
    if not DIGITS.fullmatch(code):
        raise ValidationError({FIELD: "Type the 6-digit code your authenticator app shows."})
    _accept_totp(device, code, now)
    TotpDevice.objects.filter(pk=device.pk).update(confirmed_at=timezone.now())
    return _first_codes(user)


def totp_remove(*, user) -> None:
    TotpDevice.objects.filter(user=user).delete()
    _drop_codes_if_alone(user)


def recovery_codes_new(*, user) -> list[str]:
    """Ten new one-time codes (the old ones stop working); shown once, kept as SHA-256."""
    codes = [_format(secrets.token_bytes(7)) for _ in range(RECOVERY_COUNT)]
    with transaction.atomic():
        RecoveryCode.objects.filter(user=user).delete()
        RecoveryCode.objects.bulk_create(RecoveryCode(user=user, code_hash=_hash(c)) for c in codes)
    return codes


def _format(raw: bytes) -> str:
    text = base64.b32encode(raw).decode().lower().rstrip("=")[:10]
    return f"{text[:5]}-{text[5:]}"


def _hash(code: str) -> str:
    return hashlib.sha256(code.replace("-", "").lower().encode()).hexdigest()


def _first_codes(user) -> list[str]:
    return [] if RecoveryCode.objects.filter(user=user).exists() else recovery_codes_new(user=user)


def _drop_codes_if_alone(user) -> None:
    if not has_second_factor(user):
        RecoveryCode.objects.filter(user=user).delete()


def verify_code(*, user, otp_token: str, now: float | None = None) -> str:
    """A second factor typed at sign-in (or to confirm a sensitive step): an authenticator code or a recovery
    code. Returns "totp" or "recovery"; ValidationError on the field otherwise."""
    code = clean_code(otp_token)
    if DIGITS.fullmatch(code):
        device = TotpDevice.objects.filter(user=user, confirmed_at__isnull=False).first()
        if device is None:
            raise ValidationError({FIELD: "You have no authenticator app: use a passkey or a recovery code."})
        _code_typed(device)
        try:
            _accept_totp(device, code, now)
        except ValidationError:
            _lock_when_spent(device)
            raise
        TotpDevice.objects.filter(pk=device.pk).update(tries=0, tries_since=None)
        return "totp"
    used = RecoveryCode.objects.filter(user=user, code_hash=_hash(code), used_at__isnull=True).update(
        used_at=timezone.now()
    )
    if not used:
        raise ValidationError({FIELD: "Wrong recovery code, or one already used."})
    AuditEntry.objects.create(
        kind=AuditKind.COMMAND, user=user, username=user.username, argv=["recovery-code-used", user.username]
    )
    return "recovery"


def _code_typed(device: TotpDevice) -> None:
    """Count a code typed for this account before it is checked (so parallel guesses count too); refused while the
    account's codes are locked."""
    now = timezone.now()
    with transaction.atomic():  # SQLite: an IMMEDIATE transaction; PostgreSQL: the row lock
        row = TotpDevice.objects.select_for_update().get(pk=device.pk)
        locked = row.locked_until is not None and row.locked_until > now
        if not locked:
            if row.tries_since is None or row.tries_since < now - CODE_WINDOW:
                row.tries, row.tries_since = 0, now
            row.tries += 1
            row.save(update_fields=["tries", "tries_since"])
    if locked:
        raise _locked(row.locked_until)


def _lock_when_spent(device: TotpDevice) -> None:
    """After a wrong code: the CODE_TRIES-th within the window locks the account's codes for CODE_LOCK."""
    until = timezone.now() + CODE_LOCK
    if TotpDevice.objects.filter(pk=device.pk, tries__gte=CODE_TRIES).update(
        locked_until=until, tries=0, tries_since=None
    ):
        user = device.user
        AuditEntry.objects.create(
            kind=AuditKind.COMMAND, user=user, username=user.username, argv=["second-factor-locked", user.username]
        )
        raise _locked(until)


def _locked(until) -> ValidationError:
    return ValidationError(
        {
            FIELD: f"Too many wrong codes for this account: codes from the authenticator app are refused until "
            f"{timezone.localtime(until):%H:%M}. A recovery code or a passkey still works; the admins are alerted."
        }
    )


def second_step_locked() -> list[TotpDevice]:
    """The accounts whose authenticator codes are locked now (too many wrong ones), with their users."""
    return list(TotpDevice.objects.filter(locked_until__gt=timezone.now()).select_related("user"))


# --- passkeys ----------------------------------------------------------------------------------------------------


def _rp(request) -> tuple[str, str]:
    """The relying party: its ID (the host name the browser uses, or TARN_WEBAUTHN_RP_ID) and the origin."""
    host = request.get_host()
    rp_id = settings.TARN_WEBAUTHN_RP_ID or host.rsplit(":", 1)[0].strip("[]")
    return rp_id, f"{request.scheme}://{host}"


def _challenge(request, purpose: str) -> bytes:
    """The challenge this session was given for purpose, taken once (and only within its time)."""
    saved = request.session.pop(f"webauthn_{purpose}", None)
    if not saved or time.time() - saved["at"] > CHALLENGE_SECONDS:
        raise ValidationError({"credential": "The passkey request expired: try again."})
    return base64url_to_bytes(saved["challenge"])


def _remember(request, purpose: str, challenge: bytes) -> None:
    request.session[f"webauthn_{purpose}"] = {"challenge": bytes_to_base64url(challenge), "at": time.time()}


def passkey_register_options(*, request, user) -> str:
    rp_id, _ = _rp(request)
    options = generate_registration_options(
        rp_id=rp_id,
        rp_name=ISSUER,
        user_name=user.username,
        user_id=_handle(user),
        exclude_credentials=[
            PublicKeyCredentialDescriptor(id=base64url_to_bytes(k.credential_id)) for k in user.passkeys.all()
        ],
        authenticator_selection=AuthenticatorSelectionCriteria(
            resident_key=ResidentKeyRequirement.PREFERRED, user_verification=UserVerificationRequirement.PREFERRED
        ),
    )
    _remember(request, "register", options.challenge)
    return options_to_json(options)


def _handle(user) -> bytes:
    """The user handle the authenticator keeps: a digest, not the user's id or name."""
    return hmac.new(settings.SECRET_KEY.encode(), f"tarn-user-{user.pk}".encode(), hashlib.sha256).digest()[:16]


def key_name(raw) -> str:
    """A passkey's name as typed (spaces around it dropped): printable text of up to NAME_MAX characters."""
    name = raw.strip() if isinstance(raw, str) else ""
    if not name or len(name) > NAME_MAX:
        raise ValidationError({"name": f"Name the key (up to {NAME_MAX} characters), e.g. “YubiKey on the keyring”."})
    try:
        no_bidi(name)
    except ValidationError as exc:
        raise ValidationError({"name": exc.messages}) from None
    for position, char in enumerate(name, 1):
        if not char.isprintable():
            raise ValidationError(
                {
                    "name": f"Printable characters only: U+{ord(char):04X} at character {position} is a control, "
                    "a line break or not a character."
                }
            )
    return name


def passkey_register(*, request, user, name: str, credential: dict) -> tuple[Passkey, list[str]]:
    name = key_name(name)
    if user.passkeys.filter(name=name).exists():
        raise ValidationError({"name": f"You already have a key named {name}."})
    rp_id, origin = _rp(request)
    try:
        verified = verify_registration_response(
            credential=credential,
            expected_challenge=_challenge(request, "register"),
            expected_rp_id=rp_id,
            expected_origin=origin,
        )
    except (WebAuthnException, ValueError, KeyError, TypeError) as exc:
        raise ValidationError({"credential": f"The key's answer was refused: {str(exc)[:200]}"}) from None
    try:
        with transaction.atomic():
            key = Passkey.objects.create(
                user=user,
                name=name,
                credential_id=bytes_to_base64url(verified.credential_id),
                public_key=verified.credential_public_key,
                sign_count=verified.sign_count,
            )
    except IntegrityError:  # the same credential registered twice (a browser keeps it out: excludeCredentials)
        raise ValidationError({"credential": "This key is already registered with Tarn."}) from None
    return key, _first_codes(user)


def passkey_remove(*, user, pk: int) -> None:
    """Remove one of user's keys; with the last one goes passkey-only sign-in (a key added later does not bring it
    back silently)."""
    Passkey.objects.filter(user=user, pk=pk).delete()
    if not user.passkeys.exists():
        User.objects.filter(pk=user.pk).update(passkey_login=False)
    _drop_codes_if_alone(user)


def passkey_login_options(*, request, user=None) -> str:
    """Options to sign in: with user (the second step) only that user's keys are allowed; without (a passkey
    alone), any discoverable key, the user found from it."""
    rp_id, _ = _rp(request)
    allowed = (
        [PublicKeyCredentialDescriptor(id=base64url_to_bytes(k.credential_id)) for k in user.passkeys.all()]
        if user
        else []
    )
    options = generate_authentication_options(
        rp_id=rp_id,
        allow_credentials=allowed or None,
        user_verification=UserVerificationRequirement.PREFERRED if user else UserVerificationRequirement.REQUIRED,
    )
    _remember(request, "login", options.challenge)
    return options_to_json(options)


def passkey_verify(*, request, credential: dict, user=None) -> User:
    """The user an assertion signs in (user given: it must be one of theirs); ValidationError otherwise. The key's
    counter is kept; a removed key is unknown."""
    if not isinstance(credential, dict) or not isinstance(credential.get("id"), str):
        raise ValidationError({"credential": "No passkey answer was sent."})
    challenge = _challenge(request, "login")
    if not CREDENTIAL_ID.fullmatch(credential["id"]):
        raise ValidationError({"credential": "This key is not registered with Tarn (removed?)."})
    key = Passkey.objects.select_related("user").filter(credential_id=credential["id"]).first()
    if key is None or (user is not None and key.user_id != user.pk):
        raise ValidationError({"credential": "This key is not registered with Tarn (removed?)."})
    rp_id, origin = _rp(request)
    try:
        verified = verify_authentication_response(
            credential=credential,
            expected_challenge=challenge,
            expected_rp_id=rp_id,
            expected_origin=origin,
            credential_public_key=bytes(key.public_key),
            credential_current_sign_count=key.sign_count,
            require_user_verification=user is None,
        )
    except (WebAuthnException, ValueError, KeyError, TypeError) as exc:
        raise ValidationError({"credential": f"The key's answer was refused: {str(exc)[:200]}"}) from None
    if not key.user.is_active:
        raise ValidationError({"credential": "This key is not registered with Tarn (removed?)."})
    if user is None and not (key.user.passkey_login and key.user.has_role(Role.ADMIN)):
        raise ValidationError({"credential": "This account signs in with its password first."})
    Passkey.objects.filter(pk=key.pk).update(sign_count=verified.new_sign_count, last_used_at=timezone.now())
    return key.user


def credential_from(body: bytes) -> tuple[dict, str]:
    """The JSON the page posts: {"credential": {...}, "name": "..."}; a clear error for anything else."""
    try:
        data = json.loads(body or b"{}")
    except (ValueError, RecursionError):
        raise ValidationError({"credential": "Not JSON."}) from None
    if not isinstance(data, dict) or not isinstance(data.get("credential"), dict):
        raise ValidationError({"credential": "No passkey answer was sent."})
    if not isinstance(data.get("name", ""), str):
        raise ValidationError({"name": "The key's name is text."})
    return data["credential"], data.get("name", "")


# --- policy and reset --------------------------------------------------------------------------------------------


def policy_save(*, required_roles: list[str]) -> TwoFactorPolicy:
    unknown = [r for r in required_roles if r not in Role.values]
    if unknown:
        raise ValidationError({"required_roles": f"Unknown role: {', '.join(unknown)}."})
    row = TwoFactorPolicy.objects.first() or TwoFactorPolicy()
    row.required_roles = sorted(set(required_roles))
    row.save()
    return row


def reset(*, target: User, confirm: str) -> None:
    """Remove a user's second factors (a lost phone): they sign in with the password alone, then set one up.
    Passkey-only sign-in goes too: a key added later does not bring it back silently."""
    confirmed(confirm, target.username, f"Type {target.username} to reset their second factor.")
    with transaction.atomic():
        TotpDevice.objects.filter(user=target).delete()
        Passkey.objects.filter(user=target).delete()
        RecoveryCode.objects.filter(user=target).delete()
        User.objects.filter(pk=target.pk).update(passkey_login=False)


def password_check(*, user, password: str, field: str = "password") -> None:
    """The user's own password typed again (a user without a second factor confirming a secret step)."""
    if not (isinstance(password, str) and password and user.check_password(password)):
        raise ValidationError({field: "Wrong password."})


def passkey_login_set(*, user, enabled: bool, password: str = "") -> None:
    """Passkey-only sign-in on (the password typed: it stops being asked at sign-in) or off."""
    if enabled and not user.has_role(Role.ADMIN):
        raise ValidationError({"passkey_login": "Only an admin may sign in with a passkey alone."})
    if enabled and not user.passkeys.exists():
        raise ValidationError({"passkey_login": "Add a passkey first."})
    if enabled:
        password_check(user=user, password=password)
    User.objects.filter(pk=user.pk).update(passkey_login=enabled)
