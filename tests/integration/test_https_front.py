"""The HTTPS front as make run starts it, as root on a throw-away data dir: the certificate made at the first start,
nginx in front of the unprivileged web on its Unix socket. Real TLS handshakes from this process: TLS 1.2 and 1.3
served, older refused; plain HTTP only redirects (and answers /healthz); the cookies Secure; no HSTS until the admin
trusts the certificate; a new certificate served after a reload with the web's workers untouched; a configuration
nginx refuses changes nothing; the web's workers share one queue behind the front."""

import concurrent.futures
import datetime
import grp
import hashlib
import http.client
import os
import pwd
import socket
import sqlite3
import ssl
import subprocess
import time
import urllib.parse
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import Encoding

from appliance import tls
from certificates import services
from hostlib.configfiles import ConfigRejected
from tests.certificates.certificate_helpers import sign_request
from tests.certificates.pki import Pki, pem
from tests.support.front import running_front, settles

ROOT = Path(__file__).resolve().parents[2]
# All marked django_db (one needs the database), so pytest-django keeps them in this order: the first start's
# certificate is looked at before a test switches to another.
pytestmark = [pytest.mark.integration, pytest.mark.django_db]


def _context(*, maximum=None, minimum=None) -> ssl.SSLContext:
    """A client that takes any certificate (the test compares fingerprints itself), within the versions given."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    if maximum:
        context.maximum_version = maximum
    if minimum:
        context.minimum_version = minimum
    return context


def _served_fingerprint(port: int) -> str:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        with _context().wrap_socket(raw) as tls:
            return hashlib.sha256(tls.getpeercert(binary_form=True)).digest().hex(":").upper()


def _get(port: int, path: str, *, headers=None, method="GET", body=None, tls=True):
    if tls:
        conn = http.client.HTTPSConnection("127.0.0.1", port, timeout=20, context=_context())
    else:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    conn.request(method, path, body=body, headers={"Host": f"nas.example:{port}", **(headers or {})})
    response = conn.getresponse()
    return response, response.read()


def _hsts(port: int):
    return _get(port, "/healthz")[0].getheader("Strict-Transport-Security")


def _pids(pid: int) -> set[int]:
    return {pid, *(int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split())}


@pytest.fixture(scope="module")
def front(tmp_path_factory):
    with running_front(tmp_path_factory.mktemp("front") / "data") as started:
        yield started


def test_the_first_start_makes_a_p256_certificate_and_prints_its_fingerprint_which_the_front_serves(front):
    cert = x509.load_pem_x509_certificate(front["first"])
    assert isinstance(cert.public_key(), ec.EllipticCurvePublicKey) and cert.public_key().curve.name == "secp256r1"
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert "localhost" in sans.get_values_for_type(x509.DNSName) and socket.gethostname() in sans.get_values_for_type(
        x509.DNSName
    )
    assert "127.0.0.1" in map(str, sans.get_values_for_type(x509.IPAddress))
    served = _served_fingerprint(front["https"])
    assert f"SHA-256 fingerprint: {served}" in front["said"]
    key = front["data"] / "tls" / "key.pem"
    assert key.stat().st_mode & 0o777 == 0o600 and key.stat().st_uid == 0


def test_the_fronts_workers_are_a_user_of_their_own_whose_memory_the_web_cannot_read(front):
    """Found in review: with the web's user, a compromised web could read the key out of a worker's memory."""
    master = int((front["data"] / "tls" / "nginx.pid").read_text())
    workers = [int(c) for c in Path(f"/proc/{master}/task/{master}/children").read_text().split()]
    front_uid, web = pwd.getpwnam("tarn-front").pw_uid, pwd.getpwnam("tarn")
    assert workers and all(Path(f"/proc/{w}").stat().st_uid == front_uid for w in workers)
    as_tarn = ["setpriv", "--reuid=tarn", "--regid=tarn", "--init-groups", "--"]
    peek = subprocess.run(
        [*as_tarn, "python3", "-c", f"open('/proc/{workers[0]}/mem', 'rb').read(1)"], capture_output=True, text=True
    )
    assert peek.returncode != 0 and "Permission denied" in peek.stderr, peek.stderr
    assert "tarn-front" not in {g.gr_name for g in grp.getgrall() if web.pw_name in g.gr_mem}, "the web is not in it"
    assert oct((front["data"] / "front").stat().st_mode & 0o7777) == "0o750"


def test_only_tls_1_2_and_1_3_are_served(front):
    for version in (ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3):
        context = _context(minimum=version, maximum=version)
        with socket.create_connection(("127.0.0.1", front["https"]), timeout=10) as raw:
            with context.wrap_socket(raw) as tls:
                assert tls.version() == version.name.replace("v1_", "v1.").replace("TLSv1.", "TLSv1.")
    context = _context(maximum=ssl.TLSVersion.TLSv1_1)
    context.set_ciphers("ALL:@SECLEVEL=0")  # this client would take TLS 1.1 if the server offered it
    with socket.create_connection(("127.0.0.1", front["https"]), timeout=10) as raw:
        with pytest.raises(ssl.SSLError):
            context.wrap_socket(raw)


def test_plain_http_redirects_to_https_and_answers_only_healthz(front):
    response, _ = _get(front["http"], "/pools/?x=1", tls=False)
    assert response.status == 301
    assert response.getheader("Location") == f"https://nas.example:{front['https']}/pools/?x=1"
    response, body = _get(front["http"], "/healthz", tls=False)
    assert response.status == 200 and body == b"ok"
    response, _ = _get(front["http"], "/login/", tls=False, method="POST", body=b"username=admin")
    assert response.status == 301, "a form sent in clear goes nowhere"


def test_over_https_the_cookies_are_secure_and_there_is_no_hsts_until_the_certificate_is_trusted(front):
    response, body = _get(front["https"], "/login/")
    assert response.status == 200 and b"csrfmiddlewaretoken" in body
    cookie = response.getheader("Set-Cookie")
    assert cookie.startswith("csrftoken=") and "Secure" in cookie
    assert response.getheader("Strict-Transport-Security") is None
    assert response.getheader("Server") == "nginx", "server_tokens off: no version"


def test_a_login_from_behind_the_front_is_counted_against_the_clients_address_not_one_it_claims(front):
    response, body = _get(front["https"], "/login/")
    token = body.decode().split('name="csrfmiddlewaretoken" value="', 1)[1].split('"', 1)[0]
    cookie = response.getheader("Set-Cookie").split(";", 1)[0]
    form = urllib.parse.urlencode({"csrfmiddlewaretoken": token, "username": "admin", "password": "wrong"})
    headers = {
        "Cookie": cookie,
        "Content-Type": "application/x-www-form-urlencoded",
        "Origin": f"https://nas.example:{front['https']}",
        "Referer": f"https://nas.example:{front['https']}/login/",
        "X-Real-IP": "203.0.113.9",  # claimed by the client: the front replaces it
    }
    response, body = _get(front["https"], "/login/", method="POST", body=form, headers=headers)
    assert response.status == 200 and b"Wrong username or password" in body, (response.status, body[:300])
    with sqlite3.connect(front["data"] / "db" / "tarn.sqlite3") as db:
        addresses = {row[0] for row in db.execute("SELECT address FROM appliance_loginattempts")}
    assert addresses == {"127.0.0.1"}, addresses


def test_a_new_certificate_is_served_after_a_reload_and_a_refused_one_changes_nothing(front, settings):
    """What the certificates page's switch does (appliance.tls.switch), as the root worker runs it."""
    settings.DATA_DIR, settings.TARN_HTTPS_PORT, settings.TARN_HTTP_PORT = front["data"], front["https"], front["http"]
    folder, conf = front["data"] / "tls", front["data"] / "tls" / "nginx.conf"
    web_pids = _pids(front["web"].pid)
    before, text, files = _served_fingerprint(front["https"]), conf.read_text(), sorted(os.listdir(folder))

    # A key that does not fit the certificate: nginx refuses the configuration; the front serves the old one.
    cert_pem, _ = tls.self_signed(["other.example"], [])
    _, stray_key = tls.self_signed(["other.example"], [])
    with pytest.raises(ConfigRejected, match="key values mismatch|SSL_CTX_use_PrivateKey"):
        tls.switch(cert_pem, stray_key)
    assert conf.read_text() == text and sorted(os.listdir(folder)) == files, "nothing left behind"
    assert _served_fingerprint(front["https"]) == before == tls.current().fingerprint

    # The matching key: written, nginx reloaded, the new certificate served; gunicorn's processes are the same.
    cert_pem, key_pem = tls.self_signed(["other.example"], [])
    expected = tls.switch(cert_pem, key_pem).fingerprint
    settles(
        lambda: _served_fingerprint(front["https"]), expected, "the reloaded front still serves the old certificate"
    )
    assert tls.current().fingerprint == expected and not (folder / "cert.pem").exists(), "the old one removed"
    assert _pids(front["web"].pid) == web_pids, "the web's workers were not restarted"
    assert _get(front["https"], "/healthz")[0].status == 200

    # The admin says the certificate is trusted: HSTS from the next answer on; and off again.
    tls.trust_set(True)
    settles(lambda: _hsts(front["https"]), "max-age=31536000; includeSubDomains", "no HSTS after the reload")
    assert _get(front["http"], "/healthz", tls=False)[0].getheader("Strict-Transport-Security") is None
    tls.trust_set(False)
    settles(lambda: _hsts(front["https"]), None, "HSTS still sent")


def test_an_imported_chain_is_served_whole_by_the_operation_and_a_refused_one_leaves_the_front_alone(
    front, settings, run_queued, admin_user
):
    """The certificates page's import, as its Operation runs it (the runner checks again, then switches)."""
    settings.DATA_DIR, settings.TARN_HTTPS_PORT, settings.TARN_HTTP_PORT = front["data"], front["https"], front["http"]
    pki = Pki(datetime.datetime.now(datetime.UTC))
    before = _served_fingerprint(front["https"])
    tls.trust_set(True)  # HSTS on: the new chain's root came with it, browsers do not trust it by themselves
    op = run_queued(
        services.certificate_import_start,
        user=admin_user,
        certificate=pki.full,
        private_key=pki.key,
        name="nas.example.org",
    )
    assert op.status == "succeeded", (op.message, op.log)
    assert "HSTS turned off" in op.message and tls.state().hsts is False
    settles(lambda: _hsts(front["https"]), None, "HSTS still sent for a certificate browsers do not trust")
    expected = tls.describe(pki.full).fingerprint
    settles(lambda: _served_fingerprint(front["https"]), expected, "the imported certificate is not served")
    assert expected != before and "Serving CN=nas.example.org" in op.message
    with socket.create_connection(("127.0.0.1", front["https"]), timeout=10) as raw:
        with _context().wrap_socket(raw) as conn:
            chain = conn.get_unverified_chain()  # Python 3.13: what the server sent, in order
    assert [hashlib.sha256(c).hexdigest() for c in chain] == [
        hashlib.sha256(x509.load_pem_x509_certificate(p).public_bytes(Encoding.DER)).hexdigest()
        for p in (pem(pki.server[0]), pem(pki.intermediate[0]), pem(pki.root[0]))
    ], "the chain is served whole, in order"


def test_a_request_made_here_comes_back_signed_and_is_served_with_the_key_that_never_left(
    front, settings, run_queued, admin_user
):
    settings.DATA_DIR, settings.TARN_HTTPS_PORT, settings.TARN_HTTP_PORT = front["data"], front["https"], front["http"]
    pki = Pki(datetime.datetime.now(datetime.UTC))
    op = run_queued(services.certificate_request_start, user=admin_user, names="nas.example.org")
    assert op.status == "succeeded", op.message
    signed = sign_request(pki, x509.load_pem_x509_csr(tls.request_pem()))
    chain = signed + pem(pki.intermediate[0]) + pem(pki.root[0])
    op = run_queued(
        services.certificate_import_start, user=admin_user, certificate=chain, private_key=b"", name="nas.example.org"
    )
    assert op.status == "succeeded", (op.message, op.log)
    expected = tls.describe(chain).fingerprint
    settles(lambda: _served_fingerprint(front["https"]), expected, "the certificate for the request is not served")
    assert tls.request_pem() is None and not (front["data"] / "tls" / "request-key.pem").exists(), "the request is done"


def test_behind_the_front_the_webs_workers_share_one_queue_and_held_threads_hold_up_no_request(front):
    """scripts/web.sh: behind the front a worker takes a connection only while it has a thread free, keeps none open
    after its answer, and the front keeps none either, so a request waits in the socket's one queue for whichever
    worker is free. Then connections straight to the web's socket that never finish their request, holding all of its
    threads but one, hold up no request through the front: each is answered at once by the one left."""
    argv = Path(f"/proc/{front['web'].pid}/cmdline").read_bytes().decode().split("\0")
    flag = {name: argv[argv.index(name) + 1] for name in ("--workers", "--threads", "--worker-connections")}
    assert flag["--worker-connections"] == flag["--threads"] and argv[argv.index("--keep-alive") + 1] == "0", argv
    upstream = (front["data"] / "tls" / "nginx.conf").read_text().partition("upstream tarn_web {")[2].partition("}")[0]
    assert "server unix:" in upstream and "keepalive" not in upstream, upstream
    slots = int(flag["--workers"]) * int(flag["--threads"])
    assert slots >= 2, argv
    held = []
    for _ in range(slots - 1):
        raw = socket.socket(socket.AF_UNIX)
        raw.connect(str(front["data"] / "sock" / "web.sock"))
        raw.sendall(b"GET /healthz HTTP/1.1\r\nHost: nas.example\r\n")  # the headers never end
        held.append(raw)
    try:
        time.sleep(1)  # each taken by a worker's thread, which waits for the rest

        def timed(_):
            started = time.monotonic()
            try:
                status = _get(front["http"], "/healthz", tls=False)[0].status
            except OSError as exc:  # the client's timeout: a request left waiting
                status = repr(exc)
            return status, time.monotonic() - started

        with concurrent.futures.ThreadPoolExecutor(6) as pool:
            answers = list(pool.map(timed, range(30)))
    finally:
        for raw in held:
            raw.close()
    assert [status for status, _ in answers] == [200] * 30, answers
    assert max(seconds for _, seconds in answers) < 5, answers
