"""Issue 41: passkeys over HTTPS on the LAN. Tarn behind its front (the certificate made at the first start, nginx,
the unprivileged web), reached by this machine's name as a LAN client would; Chromium trusts that certificate (its
key pinned with --ignore-certificate-errors-spki-list: trusted, not errors ignored, which WebAuthn would refuse).
A passkey registers and signs in over https://; the same passkey under another name of the same Tarn (another
origin, another relying party) is refused by the browser, and the sign-in goes no further."""

import base64
import hashlib
import re

import pytest
from cryptography import x509
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from playwright.sync_api import expect

from tests.browser.conftest import CHROMIUM, FLAGS, shot
from tests.support.front import PASSWORD, running_front

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def front(tmp_path_factory):
    with running_front(tmp_path_factory.mktemp("front") / "data") as started:
        yield started


def _trusting(browser, cert_pem: bytes, names: list[str]):
    """Chromium trusting this certificate's key, and resolving its names to this machine (as the LAN's DNS would)."""
    cert = x509.load_pem_x509_certificate(cert_pem)
    spki = cert.public_key().public_bytes(Encoding.DER, PublicFormat.SubjectPublicKeyInfo)
    pin = base64.b64encode(hashlib.sha256(spki).digest()).decode()
    rules = ",".join(f"MAP {name} 127.0.0.1" for name in names)
    args = [*FLAGS, f"--ignore-certificate-errors-spki-list={pin}", f"--host-resolver-rules={rules}"]
    return browser.browser_type.launch(executable_path=CHROMIUM, args=args, headless=True)


def _password(page, base: str):
    page.goto(f"{base}/login/")
    page.fill("input[name=username]", "admin")
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")


def test_a_passkey_registers_and_signs_in_over_https_and_another_origin_is_refused(browser, front):
    cert = x509.load_pem_x509_certificate(front["first"])
    dns = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value.get_values_for_type(x509.DNSName)
    name = next(n for n in dns if n != "localhost")  # this machine's host name: what a LAN client types
    other = "localhost"  # the same Tarn and certificate under another name: another origin
    base, elsewhere = f"https://{name}:{front['https']}", f"https://{other}:{front['https']}"
    trusting = _trusting(browser, front["first"], [name, other])
    try:
        page = trusting.new_context(viewport={"width": 1366, "height": 800}).new_page()
        errors = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        _password(page, base)
        page.wait_for_url(re.compile(rf"^{re.escape(base)}/$"))
        assert page.evaluate("window.isSecureContext && location.protocol") == "https:"
        cdp = page.context.new_cdp_session(page)
        cdp.send("WebAuthn.enable")
        options = {"protocol": "ctap2", "transport": "internal", "hasResidentKey": True}
        options |= {"hasUserVerification": True, "isUserVerified": True}
        authenticator = cdp.send("WebAuthn.addVirtualAuthenticator", {"options": options})["authenticatorId"]

        page.goto(f"{base}/account/two-factor/")
        page.fill("#passkey-name", "laptop")
        page.click("#passkey-add button")
        page.wait_for_selector("#new-codes #recovery-codes code")
        page.click("#new-codes >> text=I saved them")
        expect(page.locator("#passkeys tr[data-key='laptop']")).to_have_count(1)
        (credential,) = cdp.send("WebAuthn.getCredentials", {"authenticatorId": authenticator})["credentials"]
        assert credential["rpId"] == name, "bound to the name the browser used"
        shot(page, "https-passkey-registered")

        page.click("header form[action='/logout/'] button")
        _password(page, base)
        page.wait_for_url(f"{base}/login/verify/")
        page.click("#passkey-signin")
        page.wait_for_url(re.compile(rf"^{re.escape(base)}/$"))
        assert page.locator("header .account").count() == 1

        # Another origin of the same Tarn: the browser offers the passkey to no one but its own relying party.
        page.click("header form[action='/logout/'] button")
        _password(page, elsewhere)
        page.wait_for_url(f"{elsewhere}/login/verify/")
        page.click("#passkey-signin")
        page.wait_for_selector("#passkey-error:not(:empty)")
        assert page.url == f"{elsewhere}/login/verify/", "not signed in"
        said = page.inner_text("#passkey-error")
        assert "works only at the address it was registered at (localhost here)" in said, said
        shot(page, "https-passkey-other-origin")
        assert not errors, f"JavaScript errors: {errors}"
    finally:
        trusting.close()
