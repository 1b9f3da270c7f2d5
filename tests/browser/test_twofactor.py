"""Two-factor sign-in in the real browser: an admin sets up an authenticator app from the page (the code computed
from the key the page shows), logs out and back in with a code; the same code is refused; a recovery code works
once. Then a passkey on Chromium's virtual authenticator (CDP WebAuthn): registered, used as the second step and,
chosen by the admin, alone; once removed, it signs in no one."""

import re
import time

import pyotp
import pytest
from playwright.sync_api import expect

from tests.browser.conftest import login, shot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
PASSWORD = "a-long-password"  # tests.browser.conftest.login's
HOME = re.compile(r"^https?://[^/]+/$")  # the dashboard


def _log_out(page):
    page.click("header form[action='/logout/'] button")
    page.wait_for_url("**/login/**")


def _password(page, username="admin"):
    page.goto("/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")


def _copy_and_download(page, codes: list[str]) -> None:
    """The codes shown once can be copied and saved as a .txt, from the page itself (nothing asked of the server)."""
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    page.click("#recovery-codes-copy")
    assert page.evaluate("navigator.clipboard.readText()").split("\n") == codes
    asked = []
    page.on("request", lambda r: asked.append(r.url))
    with page.expect_download() as info:
        page.click("#recovery-codes-download")
    download = info.value
    assert download.suggested_filename == "tarn-recovery-codes-admin.txt"
    text = open(download.path()).read()
    assert text.startswith("Tarn recovery codes for admin") and text.split("\n\n", 1)[1].split() == codes
    assert not [url for url in asked if not url.startswith("blob:")]


def _code(page, code: str):
    page.fill("input[name=otp_token]", code)
    page.click("#code-form button[type=submit]")


def test_set_up_an_authenticator_sign_in_with_a_code_once_and_a_recovery_code_once(page):
    login(page)
    page.click("header a[href='/account/two-factor/']")
    page.click("#totp-begin")
    expect(page.locator("#totp-qr svg")).to_have_count(1)  # the next page, once it came
    secret = page.inner_text("#totp-secret").strip()
    totp = pyotp.TOTP(secret)
    page.fill("input[name=otp_token]", totp.now())
    page.click("#totp-confirm button")
    expect(page.locator("#recovery-codes code")).to_have_count(10)
    codes = [c.strip() for c in page.locator("#recovery-codes code").all_inner_texts()]
    shot(page, "twofactor-recovery-codes")
    _copy_and_download(page, codes)
    page.click("text=I saved them")
    expect(page.locator("#totp")).to_contain_text("On")

    _log_out(page)
    _password(page)
    page.wait_for_url("**/login/verify/")
    code = totp.at(time.time() + 30)  # the next step's: the enrolment took this one
    _code(page, code)
    page.wait_for_url(HOME)
    assert page.locator("header .account").count() == 1

    _log_out(page)
    _password(page)
    _code(page, code)  # the same code again
    expect(page.locator("#code-form")).to_contain_text("already used")
    shot(page, "twofactor-code-reused")
    _code(page, codes[0])
    page.wait_for_url(HOME)

    _log_out(page)
    _password(page)
    _code(page, codes[0])
    expect(page.locator("#code-form")).to_contain_text("already used")
    assert page.url.endswith("/login/verify/")


def test_a_passkey_on_chromiums_virtual_authenticator_signs_in_and_stops_once_removed(page):
    login(page)
    cdp = page.context.new_cdp_session(page)
    cdp.send("WebAuthn.enable")
    options = {"protocol": "ctap2", "transport": "internal", "hasResidentKey": True}
    options |= {"hasUserVerification": True, "isUserVerified": True}
    authenticator = cdp.send("WebAuthn.addVirtualAuthenticator", {"options": options})["authenticatorId"]

    page.goto("/account/two-factor/")
    page.fill("#passkey-name", "laptop")
    page.click("#passkey-add button")
    page.wait_for_selector("#new-codes #recovery-codes code")  # shown from the answer that made them
    assert page.locator("#recovery-codes code").count() == 10 and page.locator("#two-factor-page").is_hidden()
    shot(page, "twofactor-passkey-recovery-codes")
    page.click("#new-codes >> text=I saved them")
    expect(page.locator("#passkeys tr[data-key='laptop']")).to_have_count(1)
    assert len(cdp.send("WebAuthn.getCredentials", {"authenticatorId": authenticator})["credentials"]) == 1

    _log_out(page)
    _password(page)
    page.wait_for_url("**/login/verify/")
    page.click("#passkey-signin")
    page.wait_for_url(HOME)

    # The admin chooses a passkey alone: the sign-in page's button then needs no password.
    page.goto("/account/two-factor/")
    page.check("#passkey-login-form input[name=passkey_login]")
    page.fill("#passkey-login-form input[name=password]", PASSWORD)  # what sign-in then stops asking for
    page.click("#passkey-login-form button")
    _log_out(page)
    page.click("#passkey-only")
    page.wait_for_url(HOME)
    shot(page, "twofactor-passkey-alone")

    # Removed (a fresh second factor: the sign-in just now), the key signs in no one.
    page.goto("/account/two-factor/")
    page.click("#passkeys tr[data-key='laptop'] button")
    expect(page.locator("#passkeys")).to_have_count(0)
    _log_out(page)
    page.click("#passkey-only")
    page.wait_for_selector("#passkey-error:not(:empty)")
    assert "not registered" in page.inner_text("#passkey-error")
    assert page.url.endswith("/login/")
