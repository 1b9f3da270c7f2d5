"""Two-factor sign-in through the real pages: codes computed with pyotp from the secret the page shows, passkeys
answered by a software authenticator (tests.support.softkey) so py_webauthn's real checks run. Each refusal names
the field and changes nothing; no code, secret or recovery code reaches the audit log."""

import json
import re
import time
from datetime import timedelta

import pyotp
import pytest
from django.test import Client
from django.utils import timezone

from appliance import twofactor
from appliance.models import ApiToken, AuditEntry, Passkey, RecoveryCode, TotpDevice, TwoFactorPolicy
from tests.conftest import PASSWORD
from tests.support.fresh import make_fresh, make_stale, signed_in
from tests.support.softkey import SoftKey


def _secret(client) -> str:
    client.post("/account/two-factor/totp/", {"action": "begin"})
    page = client.get("/account/two-factor/").content.decode()
    assert "<svg" in page  # the QR code, drawn here
    return re.search(r'id="totp-secret">([A-Z2-7]+)<', page).group(1)


def _now_code(secret: str, offset_steps: int = 0) -> str:
    return pyotp.TOTP(secret).at(time.time() + offset_steps * 30)


def _enrol(user) -> tuple[Client, str, list[str]]:
    client = signed_in(user)  # signed in with the password just now: a fresh confirmation to add a first factor
    secret = _secret(client)
    response = client.post("/account/two-factor/totp/", {"action": "confirm", "otp_token": _now_code(secret)})
    assert response.status_code == 200
    codes = re.findall(r"<code>([a-z2-7]{5}-[a-z2-7]{5})</code>", response.content.decode())
    assert len(codes) == 10
    return client, secret, codes


def _password_step(user) -> Client:
    client = Client()
    response = client.post("/login/", {"username": user.username, "password": PASSWORD})
    assert response.status_code == 302 and response["Location"] == "/login/verify/"
    assert client.get("/").status_code == 302  # not signed in yet
    return client


def test_enrol_confirm_sign_in_with_a_code_once_and_a_recovery_code_once(admin_user, settings):
    settings.TARN_LOGIN_MAX_FAILURES = 20  # the refusals below would use up the default five (throttling: its own test)
    client, secret, codes = _enrol(admin_user)
    device = TotpDevice.objects.get(user=admin_user)
    assert device.confirmed_at and secret not in device.sealed_secret  # sealed at rest
    assert RecoveryCode.objects.filter(user=admin_user).count() == 10
    assert all(c.replace("-", "") not in r.code_hash for c in codes for r in RecoveryCode.objects.all())

    signing = _password_step(admin_user)
    for bad, said in [
        ("１２３４５６", "digits 0-9"),  # fullwidth digits: refused, never converted
        ("١٢٣٤٥٦", "digits 0-9"),  # Arabic-Indic
        ("12345", "6 digits"),
        (_now_code(secret, -3), "Wrong or expired"),  # 90 s old: outside ±1 step
    ]:
        response = signing.post("/login/verify/", {"otp_token": bad})
        assert response.status_code == 400 and said in response.content.decode(), bad
    assert signing.get("/").status_code == 302
    # The step the enrolment used is taken; the next step's code (a phone's clock a little ahead), typed with
    # spaces, signs in.
    code = _now_code(secret, 1)
    response = signing.post("/login/verify/", {"otp_token": f" {code[:3]} {code[3:]} "})
    assert response.status_code == 302 and response["Location"] == "/"
    assert signing.get("/").status_code == 200
    # The same code again (another sign-in within its 30 s): refused as used.
    again = _password_step(admin_user)
    response = again.post("/login/verify/", {"otp_token": code})
    assert response.status_code == 400 and "already used" in response.content.decode()
    # A recovery code signs in once.
    response = again.post("/login/verify/", {"otp_token": codes[0].upper()})
    assert response.status_code == 302
    assert AuditEntry.objects.filter(argv=["recovery-code-used", admin_user.username]).count() == 1
    third = _password_step(admin_user)
    response = third.post("/login/verify/", {"otp_token": codes[0]})
    assert response.status_code == 400 and "already used" in response.content.decode()
    # Nothing secret in the audit: the code field is masked, the secret and the codes appear nowhere.
    audited = json.dumps(list(AuditEntry.objects.values_list("params", "argv")))
    assert secret not in audited and code not in audited and codes[0] not in audited
    assert '"otp_token": "***"' in audited


def test_wrong_codes_are_throttled_like_passwords(admin_user, settings):
    settings.TARN_LOGIN_MAX_FAILURES = 3
    _, secret, _ = _enrol(admin_user)
    signing = _password_step(admin_user)
    statuses = [signing.post("/login/verify/", {"otp_token": "000000"}).status_code for _ in range(3)]
    assert statuses == [400, 400, 429]
    tried = AuditEntry.objects.filter(path="/login/verify/", status_code=400)
    assert list(tried.values_list("username", flat=True)) == [admin_user.username] * 2  # who tried, audited
    response = signing.post("/login/verify/", {"otp_token": _now_code(secret)})
    assert response.status_code == 429 and signing.get("/").status_code == 302


def test_a_role_that_must_have_a_second_factor_is_sent_to_enrolment_and_the_api_is_not(operator_user, admin_client):
    response = admin_client.post("/account/two-factor/policy/", {"required_roles": ["operator"]})
    assert response.status_code == 302 and TwoFactorPolicy.objects.get().required_roles == ["operator"]
    client = Client()
    client.post("/login/", {"username": operator_user.username, "password": PASSWORD})
    for path in ("/", "/pools/", "/hosts/"):
        response = client.get(path)
        assert response.status_code == 302 and response["Location"] == "/account/two-factor/", path
    assert client.get("/account/two-factor/").status_code == 200
    _, key = twofactor_token(operator_user)
    api = Client(HTTP_AUTHORIZATION=f"Bearer {key}")
    assert api.get("/api/v1/hosts/").status_code == 200  # a token is already a second secret
    secret = _secret(client)
    client.post("/account/two-factor/totp/", {"action": "confirm", "otp_token": _now_code(secret)})
    assert client.get("/pools/").status_code == 200


def twofactor_token(user):
    from appliance import services  # noqa: PLC0415 - the token service, as the token page calls it

    return services.api_token_create(user=user, name="ci")


def test_making_an_api_token_needs_a_fresh_second_factor(admin_user):
    client, secret, _ = _enrol(admin_user)
    make_stale(client, 600)
    response = client.post("/account/tokens/", {"name": "monitoring"})
    assert "needs a fresh second factor" in response.content.decode() and not ApiToken.objects.exists()
    response = client.post("/account/two-factor/confirm/?next=/account/tokens/", {"otp_token": _now_code(secret, 1)})
    assert response.status_code == 302 and response["Location"] == "/account/tokens/"
    response = client.post("/account/tokens/", {"name": "monitoring"})
    assert ApiToken.objects.filter(name="monitoring").exists()


def test_an_admin_resets_a_users_second_factor_with_the_name_typed(admin_client, operator_user):
    _enrol(operator_user)
    response = admin_client.post(f"/account/two-factor/users/{operator_user.pk}/reset/", {"confirm": "someone"})
    assert response.status_code == 400 and f"Type {operator_user.username}" in response.content.decode()
    assert TotpDevice.objects.filter(user=operator_user).exists()
    response = admin_client.post(
        f"/account/two-factor/users/{operator_user.pk}/reset/", {"confirm": operator_user.username}
    )
    assert response.status_code == 302
    assert not TotpDevice.objects.filter(user=operator_user).exists()
    assert not RecoveryCode.objects.filter(user=operator_user).exists()
    assert AuditEntry.objects.filter(
        path=f"/account/two-factor/users/{operator_user.pk}/reset/", status_code=302
    ).exists()
    # With nothing left, the password alone signs in again.
    client = Client()
    assert client.post("/login/", {"username": operator_user.username, "password": PASSWORD})["Location"] == "/"


def _register(client, key: SoftKey, name="desk key", **wrong) -> object:
    options = client.post("/account/two-factor/passkeys/options/").json()["options"]
    body = {"name": name, "credential": key.create(options, **wrong)}
    return client.post("/account/two-factor/passkeys/", json.dumps(body), content_type="application/json")


def test_a_passkey_registers_signs_in_and_stops_once_removed_and_wrong_answers_change_nothing(admin_user, settings):
    settings.TARN_LOGIN_MAX_FAILURES = 20
    client = signed_in(admin_user)
    key = SoftKey()
    response = _register(client, key, origin="https://evil.example")
    assert response.status_code == 400 and "origin" in json.dumps(response.json()).lower()
    response = _register(client, key, challenge="AAAAAAAAAAAAAAAAAAAAAA")
    assert response.status_code == 400 and "challenge" in json.dumps(response.json()).lower()
    assert not Passkey.objects.exists()
    response = _register(client, key)
    assert response.status_code == 200 and len(response.json()["codes"]) == 10  # shown by the page's script
    assert Passkey.objects.get().name == "desk key"

    def sign_in(**wrong):
        signing = _password_step(admin_user)
        options = signing.post("/login/passkey/options/").json()["options"]
        body = json.dumps({"credential": key.get(options, **wrong)})
        return signing, signing.post("/login/passkey/", body, content_type="application/json")

    for wrong, said in [
        ({"origin": "https://evil.example"}, "origin"),
        ({"challenge": "QUFBQUFBQUFBQUFBQUFBQQ"}, "challenge"),
    ]:
        signing, response = sign_in(**wrong)
        assert response.status_code == 400 and said in json.dumps(response.json()).lower(), response.json()
        assert signing.get("/").status_code == 302
    signing, response = sign_in()
    assert response.status_code == 200 and response.json()["next"] == "/"
    assert signing.get("/").status_code == 200
    assert Passkey.objects.get().sign_count == key.count

    make_fresh(client)
    client.post(f"/account/two-factor/passkeys/{Passkey.objects.get().pk}/remove/")
    assert not Passkey.objects.exists() and not RecoveryCode.objects.filter(user=admin_user).exists()
    # The removed key: the password alone signs in now (no second factor left), and the key signs in no one.
    fresh = Client()
    options = fresh.post("/login/passkey/options/").json()["options"]
    response = fresh.post(
        "/login/passkey/", json.dumps({"credential": key.get(options)}), content_type="application/json"
    )
    assert response.status_code == 400 and "not registered" in response.json()["errors"]["credential"][0]


def test_an_admin_may_choose_a_passkey_alone_and_others_may_not(admin_user, operator_user):
    for user, allowed in [(admin_user, True), (operator_user, False)]:
        client = signed_in(user)
        key = SoftKey()
        assert _register(client, key).status_code == 200
        make_fresh(client)  # as after signing in with it
        client.post("/account/two-factor/passkey-login/", {"passkey_login": "on", "password": PASSWORD})
        user.refresh_from_db()
        assert user.passkey_login is allowed
        anonymous = Client()
        options = anonymous.post("/login/passkey/options/").json()["options"]
        response = anonymous.post(
            "/login/passkey/", json.dumps({"credential": key.get(options)}), content_type="application/json"
        )
        assert (response.status_code == 200) is allowed, response.content
        assert (anonymous.get("/").status_code == 200) is allowed


@pytest.mark.parametrize("body", [b"not json", b"[]", b'{"credential": "x"}', b'{"credential": {"id": 5}}'])
def test_a_malformed_passkey_answer_is_a_clear_error(admin_user, body):
    signing = _password_step_for_passkey(admin_user)
    response = signing.post("/login/passkey/", body, content_type="application/json")
    assert response.status_code == 400 and "credential" in response.json()["errors"]


def _password_step_for_passkey(user) -> Client:
    client = signed_in(user)
    _register(client, SoftKey())
    return _password_step(user)


def test_clean_code_takes_ascii_only():
    assert twofactor.clean_code(" 123 456 ") == "123456"
    assert twofactor.clean_code("ABCDE-FGH23") == "abcdefgh23"
    for bad in ("１２３４５６", "12345６", "abc", "1234567"):
        with pytest.raises(twofactor.ValidationError):
            twofactor.clean_code(bad)


def test_a_stale_session_cannot_add_a_factor_and_a_session_that_must_enrol_reaches_no_api(admin_user, operator_user):
    client, _, _ = _enrol(admin_user)
    make_stale(client)  # a session whose second factor is an hour old (stolen?)
    assert client.post("/account/two-factor/passkeys/options/").status_code == 403
    key = SoftKey()
    body = {"name": "sneaky", "credential": key.create('{"challenge": "AAAA"}')}
    response = client.post("/account/two-factor/passkeys/", json.dumps(body), content_type="application/json")
    assert response.status_code == 403
    assert not Passkey.objects.exists()
    response = client.post("/account/two-factor/passkey-login/", {"passkey_login": "on"})
    assert response["Location"].startswith("/account/two-factor/confirm/")
    admin_user.refresh_from_db()
    assert not admin_user.passkey_login
    response = client.post("/account/tokens/", {"name": "after"})
    assert not ApiToken.objects.filter(name="after").exists()

    TwoFactorPolicy.objects.create(required_roles=["operator"])
    browser = Client()
    browser.post("/login/", {"username": operator_user.username, "password": PASSWORD})
    assert browser.get("/api/v1/hosts/").status_code == 403  # the session's API, too, waits for enrolment


def _password_step_from(user, address: str) -> Client:
    client = Client(REMOTE_ADDR=address)
    response = client.post("/login/", {"username": user.username, "password": PASSWORD})
    assert response["Location"] == "/login/verify/"
    return client


def test_codes_are_counted_per_account_across_addresses_and_sessions_then_locked_with_an_alert(admin_user, settings):
    from analytics.services import alerts_evaluate  # noqa: PLC0415 - the alert evaluation every minute runs

    settings.TARN_LOGIN_MAX_FAILURES = 50  # per name and address: not what is tested here
    client, secret, codes = _enrol(admin_user)
    wrong = f"{(int(_now_code(secret)) + 1) % 1_000_000:06d}"
    # Ten wrong codes from five addresses (two each, so no session ends), and from a signed-in session's
    # confirmation page (a stolen session guessing): one count for the account.
    said = []
    for n in range(4):
        signing = _password_step_from(admin_user, f"10.0.0.{n + 1}")
        said += [signing.post("/login/verify/", {"otp_token": wrong}).content.decode() for _ in range(2)]
    make_stale(client)
    said += [client.post("/account/two-factor/confirm/", {"otp_token": wrong}).content.decode() for _ in range(2)]
    assert all("Wrong or expired" in s for s in said[:9]) and "Too many wrong codes for this account" in said[9]
    assert AuditEntry.objects.filter(argv=["second-factor-locked", admin_user.username]).count() == 1
    # Locked: the right code from a new address is refused; a recovery code still signs in.
    signing = _password_step_from(admin_user, "10.0.0.9")
    response = signing.post("/login/verify/", {"otp_token": _now_code(secret, 1)})
    assert response.status_code == 400 and "refused until" in response.content.decode()
    assert signing.post("/login/verify/", {"otp_token": codes[0]})["Location"] == "/"
    raised, _ = alerts_evaluate(host=None)
    assert [(a.rule, a.subject) for a in raised] == [("second_step_locked", "user alice")]
    assert "change the password" in raised[0].message
    # An hour later the lock ends, the alert clears and the right code signs in.
    TotpDevice.objects.update(locked_until=timezone.now() - timedelta(seconds=1))
    _, cleared = alerts_evaluate(host=None)
    assert [a.rule for a in cleared] == ["second_step_locked"]
    signing = _password_step_from(admin_user, "10.0.0.9")
    assert signing.post("/login/verify/", {"otp_token": _now_code(secret, 1)})["Location"] == "/"


def test_a_half_signed_in_session_ends_after_five_wrong_answers(admin_user, settings):
    settings.TARN_LOGIN_MAX_FAILURES = 50
    _, secret, _ = _enrol(admin_user)
    signing = _password_step(admin_user)
    answers = [signing.post("/login/verify/", {"otp_token": "000000"}) for _ in range(5)]
    assert [a.status_code for a in answers] == [400, 400, 400, 400, 302]
    assert answers[-1]["Location"] == "/login/"
    response = signing.post("/login/verify/", {"otp_token": _now_code(secret, 1)})
    assert response["Location"] == "/login/" and signing.get("/").status_code == 302  # the password first, again
    # A passkey's wrong answers count the same.
    key = SoftKey()
    _register(signed_in(admin_user), key)
    signing = _password_step(admin_user)
    for _ in range(5):
        options = signing.post("/login/passkey/options/").json()["options"]
        body = json.dumps({"credential": key.get(options, origin="https://evil.example")})
        response = signing.post("/login/passkey/", body, content_type="application/json")
    assert response.status_code == 400 and "sign in again" in response.json()["errors"]["credential"][0]
    assert response.json()["next"] == "/login/"
    assert signing.get("/login/verify/")["Location"] == "/login/"


def test_a_first_factor_and_passkey_only_sign_in_need_the_password(admin_user, settings):
    settings.TARN_LOGIN_MAX_FAILURES = 50
    client = signed_in(admin_user)
    make_stale(client)  # a session found or stolen an hour after its sign-in
    response = client.post("/account/two-factor/totp/", {"action": "begin"})
    assert response["Location"].startswith("/account/two-factor/confirm/")
    assert not TotpDevice.objects.exists()
    assert client.post("/account/two-factor/passkeys/options/").status_code == 403
    key = SoftKey()
    body = {"name": "sneaky", "credential": key.create('{"challenge": "AAAA"}')}
    response = client.post("/account/two-factor/passkeys/", json.dumps(body), content_type="application/json")
    assert response.status_code == 403 and not Passkey.objects.exists()
    # The password, typed on the confirmation page, lets the first factor in.
    page = client.get("/account/two-factor/confirm/").content.decode()
    assert 'name="password"' in page
    client.post("/account/two-factor/confirm/", {"password": PASSWORD})
    assert _register(client, key).status_code == 200
    # Passkey-only sign-in: on only with the password typed (a fresh factor alone is not enough).
    make_fresh(client)
    for password in ("", "wrong-password"):
        client.post("/account/two-factor/passkey-login/", {"passkey_login": "on", "password": password})
        admin_user.refresh_from_db()
        assert not admin_user.passkey_login, password
    client.post("/account/two-factor/passkey-login/", {"passkey_login": "on", "password": PASSWORD})
    admin_user.refresh_from_db()
    assert admin_user.passkey_login
    client.post("/account/two-factor/passkey-login/", {})  # off: no password needed
    admin_user.refresh_from_db()
    assert not admin_user.passkey_login


def test_new_recovery_codes_are_never_kept_in_the_session(admin_user):
    from django.contrib.sessions.models import Session  # noqa: PLC0415

    client = signed_in(admin_user)
    response = _register(client, SoftKey())
    codes = response.json()["codes"]
    assert len(codes) == 10 and response.json()["next"] == "/account/two-factor/"
    kept = json.dumps([s.get_decoded() for s in Session.objects.all()])
    assert not any(c in kept or c.replace("-", "") in kept for c in codes)
    page = client.get("/account/two-factor/").content.decode()
    assert 'id="new-codes" hidden' in page and 'data-codes="new-codes"' in page  # where the page's script shows them


def test_a_reset_or_the_last_key_removed_turns_passkey_only_sign_in_off(admin_user, admin_client):
    from appliance.models import User  # noqa: PLC0415

    other = User.objects.create(username="bob", role="admin", password=admin_user.password)
    for user, undo in [
        (other, lambda: admin_client.post(f"/account/two-factor/users/{other.pk}/reset/", {"confirm": "bob"})),
        (admin_user, lambda: admin_client.post(f"/account/two-factor/passkeys/{Passkey.objects.get().pk}/remove/")),
    ]:
        client = signed_in(user)
        assert _register(client, SoftKey()).status_code == 200
        make_fresh(client)
        client.post("/account/two-factor/passkey-login/", {"passkey_login": "on", "password": PASSWORD})
        user.refresh_from_db()
        assert user.passkey_login
        make_fresh(admin_client)
        assert undo().status_code == 302
        user.refresh_from_db()
        assert not user.passkey_login and not Passkey.objects.filter(user=user).exists()
        # A key added later does not bring passkey-only sign-in back.
        assert _register(signed_in(user), SoftKey()).status_code == 200
        user.refresh_from_db()
        assert not user.passkey_login
        Passkey.objects.filter(user=user).delete()


HOSTILE_NAMES = [
    ("nul\x00inside", "U+0000"),
    ("two\nlines", "U+000A"),
    ("lone \ud800 surrogate", "U+D800"),
    ("tab\there", "U+0009"),
    ("\u202eevil", "Text-direction"),
    ("x" * 61, "up to 60"),
    ("   ", "Name the key"),
    ("x" * 100_000, "up to 60"),
]


@pytest.mark.parametrize(("name", "said"), HOSTILE_NAMES)
def test_a_passkey_name_that_is_not_printable_text_is_refused_on_its_field(admin_user, name, said):
    client = signed_in(admin_user)
    response = _register(client, SoftKey(), name=name)
    assert response.status_code == 400 and said in response.json()["errors"]["name"][0], response.content
    assert not Passkey.objects.exists()


@pytest.mark.parametrize("name", [5, None, ["a"], {"a": 1}, True])
def test_a_passkey_name_that_is_not_text_is_refused(admin_user, name):
    client = signed_in(admin_user)
    client.post("/account/two-factor/passkeys/options/")
    body = json.dumps({"name": name, "credential": {"id": "AAAA"}})
    response = client.post("/account/two-factor/passkeys/", body, content_type="application/json")
    assert response.status_code == 400 and "name" in response.json()["errors"]
    assert not Passkey.objects.exists()


def test_the_same_key_registered_twice_is_refused_not_a_500(admin_user, operator_user):
    key = SoftKey()
    assert _register(signed_in(admin_user), key).status_code == 200
    for user, name in [(admin_user, "again"), (operator_user, "stolen id")]:
        response = _register(signed_in(user), key, name=name)
        assert response.status_code == 400 and "already registered" in response.json()["errors"]["credential"][0]
    assert Passkey.objects.count() == 1


HOSTILE = ["\ud800", "\udfff", "a\x00b", "x" * 200_000, "١٢٣٤٥٦", "\n", "", "../../etc", "' OR 1=1 --"]
HOSTILE_JSON = [*HOSTILE, 5, -1, 1e308, None, True, [], ["x"], {}, {"id": "\ud800"}, [[[[[]]]]]]


def _json_bodies():
    for value in HOSTILE_JSON:
        yield {"name": value, "credential": value}
        yield {"name": "ok", "credential": {"id": value, "rawId": value, "type": value, "response": value}}
        yield {
            "credential": {"id": "AAAA", "rawId": "AAAA", "type": "public-key", "response": {"clientDataJSON": value}}
        }
    yield "not an object"
    yield ["credential"]


def _form_bodies():
    """Raw form bodies: what a browser cannot send but a script can (invalid UTF-8, a lone surrogate's bytes)."""
    fields = ["otp_token", "password", "action", "passkey_login", "required_roles", "confirm", "name"]
    for raw in [b"%ED%A0%80", b"%00", b"%FF%FE", b"x" * 200_000, b"%D9%A1%D9%A2", b"%0A"]:
        yield b"&".join(f.encode() + b"=" + raw for f in fields)


def test_no_input_on_the_two_factor_pages_answers_a_500(admin_user, operator_user, settings):
    settings.TARN_LOGIN_MAX_FAILURES = 10_000
    settings.TARN_LOGIN_MAX_PER_ADDRESS = 10_000
    key = SoftKey()
    _register(signed_in(admin_user), key)
    json_paths = [
        "/account/two-factor/passkeys/options/",
        "/account/two-factor/passkeys/",
        "/account/two-factor/confirm/passkey/options/",
        "/account/two-factor/confirm/passkey/",
        "/login/passkey/options/",
        "/login/passkey/",
    ]
    form_paths = [
        "/login/verify/",
        "/account/two-factor/totp/",
        "/account/two-factor/recovery-codes/",
        "/account/two-factor/passkey-login/",
        "/account/two-factor/confirm/",
        "/account/two-factor/policy/",
        f"/account/two-factor/users/{operator_user.pk}/reset/",
        "/account/tokens/",
        "/login/",
    ]
    bad = []
    for client in (signed_in(admin_user), _password_step(admin_user), Client()):
        for path in json_paths:
            for body in _json_bodies():
                client.post(path.replace("passkey/", "passkey/options/") if path.endswith("passkey/") else path)
                response = client.post(path, json.dumps(body), content_type="application/json")
                if response.status_code >= 500:
                    bad.append((path, str(body)[:60], response.status_code))
            for raw in (b"\xff\xfe", b"{" * 100_000, b'{"credential": {"id": "\\ud800"}}'):
                response = client.post(path, raw, content_type="application/json")
                if response.status_code >= 500:
                    bad.append((path, raw[:20], response.status_code))
        for path in form_paths:
            for body in _form_bodies():
                response = client.generic("POST", path, body, content_type="application/x-www-form-urlencoded")
                if response.status_code >= 500:
                    bad.append((path, body[:40], response.status_code))
    assert bad == []
    assert not Passkey.objects.exclude(name="desk key").exists()
