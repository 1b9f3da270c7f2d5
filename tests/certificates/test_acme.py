"""Issue 41: ACME's rules, on this machine alone (the CA itself: tests/integration/test_acme.py, against pebble).
Names a CA can prove over HTTP only; a form refused names its field and changes nothing; the renewal starts at 2/3
of the lifetime, only while ACME's certificate is served, hours apart after a failure; three failures in a row
raise an alert; a directory that answers without end is cut at 1 MiB; the front serves tokens, nothing else."""

import datetime
import http.server
import ssl
import threading

import pytest
from django.core.exceptions import ValidationError

from analytics.models import Alert
from analytics.services import alerts_evaluate
from appliance import tls
from appliance.models import Operation
from certificates import acme_order, services
from certificates.models import Acme
from certificates.services.acme import acme_names
from hostlib import webfront
from tests.support.pebble import listener_pki

pytestmark = pytest.mark.django_db
NOW = datetime.datetime(2026, 11, 29, 12, 0, tzinfo=datetime.UTC)
DIRECTORY = "https://acme.lab.test/dir"


@pytest.fixture
def data(settings, tmp_path):
    settings.DATA_DIR = tmp_path / "var"
    (settings.DATA_DIR / "tls").mkdir(parents=True, mode=0o710)
    settings.TARN_FRONT = True
    return settings.DATA_DIR


@pytest.mark.parametrize(
    "typed, said",
    [
        ("", "Give the DNS name"),
        ("*.lab.test", "a wildcard needs DNS-01"),
        ("192.0.2.7", "not a DNS name"),
        ("2001:db8::1", "not a DNS name"),
        ("bad_name.lab.test", "not a DNS name"),
        (" ".join(f"n{i}.lab.test" for i in range(21)), "21 names: at most 20"),
    ],
)
def test_names_the_ca_cannot_prove_over_http_are_refused_on_their_field(typed, said):
    with pytest.raises(ValidationError) as caught:
        acme_names(typed)
    assert said in caught.value.message_dict["names"][0]


def test_names_are_kept_in_order_once_each_and_an_international_one_in_its_ascii_form():
    assert acme_names("NAS.lab.test, www.lab.test nas.lab.test. bücher.lab.test") == [
        "nas.lab.test",
        "www.lab.test",
        "xn--bcher-kva.lab.test",
    ]


@pytest.mark.parametrize(
    "change, field, said",
    [
        ({"directory": "http://acme.lab.test/dir"}, "directory", "an https:// URL"),
        ({"directory": "https://user:pw@acme.lab.test/dir"}, "directory", "an https:// URL"),
        ({"agree": False}, "agree", "agreeing to its terms"),
        ({"roots": "not pem"}, "roots", "outside the PEM blocks"),
        ({"names": "*.lab.test"}, "names", "wildcard"),
    ],
)
def test_a_refused_order_names_its_field_and_changes_nothing(data, admin_user, change, field, said):
    values = {"directory": DIRECTORY, "email": "", "names": "nas.lab.test", "roots": "", "agree": True} | change
    with pytest.raises(ValidationError) as caught:
        services.acme_start(user=admin_user, **values)
    assert said in caught.value.message_dict[field][0]
    assert not Acme.objects.exists() and not Operation.objects.exists()


def test_without_the_front_there_is_no_port_80_to_answer_on(data, admin_user, settings):
    settings.TARN_FRONT = False
    with pytest.raises(ValidationError, match="ACME needs Tarn's HTTPS front"):
        services.acme_start(user=admin_user, directory=DIRECTORY, email="", names="nas.lab.test", agree=True)


def test_another_directory_means_another_account(data, admin_user, django_capture_on_commit_callbacks):
    Acme.objects.create(pk=1, directory=DIRECTORY, account="https://acme.lab.test/acct/1", account_directory=DIRECTORY)
    services.acme_start(user=admin_user, directory=DIRECTORY, email="", names="nas.lab.test", agree=True)
    assert Acme.objects.get().account == "https://acme.lab.test/acct/1", "the same CA: the same account"
    Operation.objects.all().delete()
    services.acme_start(
        user=admin_user, directory="https://other.lab.test/dir", email="", names="a.lab.test", agree=True
    )
    row = Acme.objects.get()
    assert row.account == "" and row.directory == "https://other.lab.test/dir" and row.names == ["a.lab.test"]


def _issued(data, *, days_in: float, lifetime_days: int = 90, **row) -> Acme:
    """ACME's certificate served, days_in days after it was issued (a self-signed one stands in for it)."""
    made = NOW - datetime.timedelta(days=days_in)
    cert, key = tls.self_signed(["nas.lab.test"], [], now=made)
    (data / "tls" / "cert.pem").write_bytes(cert)
    (data / "tls" / "key.pem").write_bytes(key)
    (data / "tls" / "key.pem").chmod(0o600)
    info = tls.describe(cert)
    renew_after = info.not_before + datetime.timedelta(days=lifetime_days * 2 / 3)
    fields = {"directory": DIRECTORY, "names": ["nas.lab.test"], "fingerprint": info.fingerprint} | row
    return Acme.objects.create(pk=1, renew_after=renew_after, **fields)


def test_the_renewal_starts_at_two_thirds_of_the_lifetime_only(data):
    _issued(data, days_in=59)
    assert services.acme_renew_due(NOW) is False and not Operation.objects.exists()
    assert services.acme_renew_due(NOW + datetime.timedelta(days=1, minutes=1)) is True
    op = Operation.objects.get()
    assert op.kind == "certificates.acme" and op.user is None and op.params == {"renewal": True}
    assert services.acme_renew_due(NOW + datetime.timedelta(days=2)) is False, "one at a time"


def test_no_renewal_once_stopped_or_while_another_certificate_is_served(data, admin_user):
    row = _issued(data, days_in=70)
    assert services.acme_stop(user=admin_user) is True
    assert services.acme_renew_due(NOW) is False
    Acme.objects.filter(pk=1).update(renew=True, fingerprint="AB:CD")  # the certificate served is another one
    assert services.acme_renew_due(NOW) is False and not Operation.objects.exists()
    Acme.objects.filter(pk=1).update(fingerprint=row.fingerprint)
    assert services.acme_renew_due(NOW) is True


def test_after_a_failure_the_next_try_waits_hours(data):
    _issued(data, days_in=70, failures=1, tried_at=NOW - datetime.timedelta(hours=5))
    assert services.acme_renew_due(NOW) is False
    assert services.acme_renew_due(NOW + datetime.timedelta(hours=1, minutes=1)) is True


def test_three_failed_tries_in_a_row_raise_an_alert_with_the_cas_words(data):
    _issued(data, days_in=70, failures=2, last_error="The CA refused: rateLimited")
    alerts_evaluate(host=None, now=NOW)
    assert not Alert.objects.filter(rule="certificate_renewal_failing").exists()
    Acme.objects.filter(pk=1).update(failures=3)
    alerts_evaluate(host=None, now=NOW)
    alert = Alert.objects.get(rule="certificate_renewal_failing", cleared_at__isnull=True)
    assert alert.host is None and alert.message == (
        "ACME failed 3 times in a row for nas.lab.test: The CA refused: rateLimited"
    )
    Acme.objects.filter(pk=1).update(renew=False)
    alerts_evaluate(host=None, now=NOW)
    assert not Alert.objects.filter(rule="certificate_renewal_failing", cleared_at__isnull=True).exists()


class _Hostile(http.server.BaseHTTPRequestHandler):
    """A directory that answers without end (/endless), or sends the client elsewhere (/away)."""

    def do_GET(self):  # noqa: N802 - http.server's name
        if self.path == "/away":
            self.send_response(302)
            self.send_header("Location", "https://127.0.0.1:1/dir")
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        try:
            self.wfile.write(b'{"x": "' + b"a" * (2 << 20))
        except OSError:
            pass

    def log_message(self, *args):
        pass


@pytest.fixture
def hostile(tmp_path):
    """The hostile directory over HTTPS, its CA's PEM (what the admin would give as the private CA's)."""
    ca = listener_pki(tmp_path)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tmp_path / "cert.pem", tmp_path / "key.pem")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hostile)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"https://127.0.0.1:{server.server_port}", ca.decode()
    server.shutdown()


def _obtain(directory: str, roots: str = "") -> list[str]:
    with pytest.raises(ValidationError) as caught:
        acme_order.obtain(
            directory=directory, email="", names=["nas.lab.test"], roots=roots, account="", progress=lambda *_: None
        )
    return caught.value.messages


def test_a_directory_that_answers_without_end_is_cut_at_a_mebibyte(data, hostile):
    base, ca = hostile
    said = _obtain(f"{base}/endless", ca)[0]
    assert said.startswith("The ACME server did not answer") and "answered more than 1024 KiB" in said


def test_the_ca_cannot_send_tarn_elsewhere_nor_over_plain_http(data, hostile):
    base, ca = hostile
    said = _obtain(f"{base}/away", ca)[0]
    assert said.startswith("The ACME server did not answer") and "redirect" in said.lower(), said
    said = _obtain("http://127.0.0.1:9/dir")[0]
    assert "an ACME directory is asked over https:// only" in said, said


def test_without_its_roots_a_private_directorys_https_is_not_trusted(data, hostile):
    base, _ = hostile
    said = _obtain(f"{base}/endless")[0]
    assert said.startswith("The ACME directory's certificate is not trusted"), said


def test_a_renewal_queued_before_an_import_does_not_replace_the_import(data, run_queued):
    from appliance.operations import operation_start  # noqa: PLC0415

    _issued(data, days_in=70)
    Acme.objects.filter(pk=1).update(fingerprint="AB:CD")  # an import came in between
    op = run_queued(operation_start, kind="certificates.acme", host=None, user=None, params={"renewal": True})
    assert op.status == "failed" and op.message == "Not renewed: the certificate served is no longer the one ACME gave."
    assert Acme.objects.get().failures == 1


def test_the_front_serves_tokens_from_the_challenge_folder_and_nothing_else():
    front = webfront.Front(
        https_port=443,
        http_port=80,
        cert="/d/tls/cert.pem",
        key="/d/tls/key.pem",
        upstream="/d/sock/web.sock",
        pid_file="/d/tls/nginx.pid",
        temp_dir="/d/front",
        challenges="/d/front/acme",
    )
    conf = webfront.render(front)
    http_block = conf.split("server {")[1]
    assert 'location ~ "^/\\.well-known/acme-challenge/([A-Za-z0-9_-]{16,128})$"' in http_block
    assert "alias /d/front/acme/$1;" in http_block and "default_type text/plain;" in http_block
    assert "acme-challenge" not in conf.split("server {")[2], "only on the HTTP port"
    with pytest.raises(ValueError, match="challenges"):
        webfront.render(front.__class__(**{**front.__dict__, "challenges": "/d/front/acme; evil"}))


def test_a_token_that_is_not_base64url_never_becomes_a_file(data):
    (data / "front").mkdir(mode=0o750)
    for token in ("../../tls/key", "short", "a" * 43 + "/x", "a" * 129):
        with pytest.raises(ValueError):
            tls.challenge_put(token, "answer")
    tls.challenge_put("b" * 43, "b" * 43 + ".thumb")
    assert (tls.challenge_folder() / ("b" * 43)).read_text() == "b" * 43 + ".thumb"
    tls.challenges_clear()
    assert list(tls.challenge_folder().iterdir()) == []


def test_the_page_offers_acme_and_a_refused_form_keeps_what_was_typed(admin_client, data):
    page = admin_client.get("/certificates/").content.decode()
    assert "From an ACME CA" in page and "acme-v02.api.letsencrypt.org" in page
    response = admin_client.post(
        "/certificates/acme/", {"directory": DIRECTORY, "names": "*.lab.test", "email": "", "roots": "", "agree": "on"}
    )
    assert response.status_code == 400 and not Operation.objects.exists()
    form = response.context["acme_form"]
    assert "wildcard" in form.errors["names"][0] and form["directory"].value() == DIRECTORY


def test_the_page_orders_and_shows_the_state(admin_client, data):
    response = admin_client.post(
        "/certificates/acme/", {"directory": DIRECTORY, "names": "nas.lab.test", "email": "a@lab.test", "agree": "on"}
    )
    assert response.status_code == 302, response.content[:500]
    op = Operation.objects.get()
    assert op.kind == "certificates.acme" and Acme.objects.get().email == "a@lab.test"
    Acme.objects.filter(pk=1).update(failures=2, last_error="The CA refused: badCSR")
    page = admin_client.get("/certificates/").content.decode()
    assert "2 in a row" in page and "The CA refused: badCSR" in page and "Stop renewing" in page
    assert admin_client.post("/certificates/acme/stop/").status_code == 302
    assert Acme.objects.get().renew is False
    assert "Stop renewing" not in admin_client.get("/certificates/").content.decode()
