"""Issue 41: a certificate from a real ACME CA (Let's Encrypt's pebble, run here) through the front as make run
starts it: pebble checks each name's HTTP-01 answer on the front's HTTP port, the chain it issues is served, the
renewal at 2/3 of the lifetime keeps the account and brings a new certificate; a directory that does not answer, a
challenge the CA cannot check and a name it refuses each leave the certificate in use as it was, and three failed
renewals in a row raise an alert."""

import datetime
import hashlib
import http.client
import os
import socket
import ssl
import stat
from pathlib import Path

import pytest
from cryptography import x509
from django.utils import timezone

from analytics.models import Alert
from analytics.services import alerts_evaluate
from appliance import tls
from appliance.models import Operation
from certificates import services
from certificates.models import Acme
from tests.certificates.pki import Pki
from tests.support.front import running_front, settles
from tests.support.pebble import BLOCKED, dns_servfail, running_pebble

pytestmark = [pytest.mark.integration, pytest.mark.django_db]
NAMES = "nas.lab.test www.lab.test"


@pytest.fixture(scope="module")
def front(tmp_path_factory):
    with running_front(tmp_path_factory.mktemp("acme-front") / "data") as started:
        yield started


@pytest.fixture(scope="module")
def pebble(front, tmp_path_factory):
    with running_pebble(tmp_path_factory.mktemp("pebble"), http_port=front["http"]) as started:
        yield started


@pytest.fixture
def here(front, settings):
    """This process works on the front's data dir, as its root worker does."""
    settings.DATA_DIR, settings.TARN_HTTPS_PORT, settings.TARN_HTTP_PORT = front["data"], front["https"], front["http"]
    settings.TARN_FRONT = True
    return front


def _served(port: int) -> tuple[str, list[bytes]]:
    """The fingerprint of the certificate the front serves, and the chain it sends (DER, in order)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        with context.wrap_socket(raw) as conn:
            chain = conn.get_unverified_chain()
    return hashlib.sha256(chain[0]).digest().hex(":").upper(), chain


def _get(port: int, path: str):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("GET", path, headers={"Host": "nas.lab.test"})
    response = conn.getresponse()
    return response, response.read()


def _order(run_queued, user, pebble, *, names=NAMES, directory=None):
    return run_queued(
        services.acme_start,
        user=user,
        directory=directory or pebble["directory"],
        email="admin@lab.test",
        names=names,
        roots=pebble["roots"],
        agree=True,
    )


def test_a_certificate_from_the_acme_ca_is_served_and_renewed_at_two_thirds_of_its_life(
    here, pebble, run_queued, admin_user
):
    first_start = tls.current().fingerprint
    op = _order(run_queued, admin_user, pebble)
    assert op.status == "succeeded", (op.message, op.log, pebble["log"].read_text()[-2000:])
    acme = Acme.objects.get()
    assert acme.fingerprint == tls.current().fingerprint != first_start
    settles(lambda: _served(here["https"])[0], acme.fingerprint, "the front does not serve ACME's certificate")
    chain = _served(here["https"])[1]
    leaf = x509.load_der_x509_certificate(chain[0])
    sans = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert sans.get_values_for_type(x509.DNSName) == ["nas.lab.test", "www.lab.test"]
    assert "Pebble Intermediate" in leaf.issuer.rfc4514_string() and len(chain) >= 2, "the intermediate is sent too"
    lifetime = leaf.not_valid_after_utc - leaf.not_valid_before_utc
    assert abs(acme.renew_after - (leaf.not_valid_before_utc + lifetime * 2 / 3)) < datetime.timedelta(seconds=2)
    assert acme.account.startswith("https://127.0.0.1:") and acme.failures == 0
    assert "Serving nas.lab.test, www.lab.test from CN=Pebble Intermediate" in op.message
    key = here["data"] / "tls" / "acme-account.pem"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600 and key.stat().st_uid == 0
    assert os.listdir(tls.challenge_folder()) == [], "the answers are gone once the order is done"

    assert services.acme_renew_due(acme.renew_after - datetime.timedelta(hours=1)) is False, "not before 2/3"
    with_renewal = run_queued(services.acme_renew_due, now=acme.renew_after + datetime.timedelta(seconds=1))
    assert with_renewal is True
    renewal = Operation.objects.filter(kind="certificates.acme").latest("id")
    assert renewal.status == "succeeded" and renewal.user is None and renewal.params == {"renewal": True}, (
        renewal.message
    )
    renewed = Acme.objects.get()
    assert renewed.account == acme.account, "the renewal keeps the account"
    assert renewed.fingerprint != acme.fingerprint
    settles(lambda: _served(here["https"])[0], renewed.fingerprint, "the renewed certificate is not served")
    assert renewed.renew_after > acme.renew_after


def test_a_directory_that_does_not_answer_a_challenge_the_ca_cannot_check_and_a_refused_name_change_nothing(
    here, pebble, run_queued, admin_user
):
    before = _served(here["https"])[0]
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))  # a port nothing listens on
    port = closed.getsockname()[1]
    op = _order(run_queued, admin_user, pebble, directory=f"https://127.0.0.1:{port}/dir")
    assert op.status == "failed" and op.message.startswith("The ACME server did not answer"), op.message
    closed.close()

    dns_servfail(pebble["dns"], "nowhere.lab.test")
    op = _order(run_queued, admin_user, pebble, names="nowhere.lab.test")
    assert op.status == "failed" and op.message.startswith(
        "The CA could not reach Tarn's answer for nowhere.lab.test"
    ), op.message
    assert "could not resolve" in op.message and "the name must resolve to this machine" in op.message, op.message

    op = _order(run_queued, admin_user, pebble, names=BLOCKED)
    assert op.status == "failed" and op.message.startswith("The CA refused:") and "rejectedIdentifier" in op.message, (
        op.message
    )
    assert _served(here["https"])[0] == before == tls.current().fingerprint, "the certificate in use stays"
    acme = Acme.objects.get()
    assert acme.failures == 3 and "rejectedIdentifier" in acme.last_error
    assert os.listdir(tls.challenge_folder()) == []


def test_three_failed_renewals_in_a_row_raise_an_alert_and_a_success_clears_it(here, pebble, run_queued, admin_user):
    op = _order(run_queued, admin_user, pebble)
    assert op.status == "succeeded", op.message
    served = Acme.objects.get().fingerprint
    settles(lambda: _served(here["https"])[0], served, "the front does not serve ACME's certificate")
    acme = Acme.objects.get()
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    Acme.objects.filter(pk=1).update(directory=f"https://127.0.0.1:{closed.getsockname()[1]}/dir")
    when = acme.renew_after + datetime.timedelta(minutes=1)
    for i in range(3):
        assert run_queued(services.acme_renew_due, now=when) is True, i
        Acme.objects.filter(pk=1).update(tried_at=when)  # the try's time on the clock the test moves
        assert services.acme_renew_due(when + datetime.timedelta(hours=1)) is False, "retried hours later, not now"
        when += datetime.timedelta(hours=6, minutes=1)
    closed.close()
    acme = Acme.objects.get()
    assert acme.failures == 3 and acme.last_error.startswith("The ACME server did not answer")
    alerts_evaluate(host=None, now=timezone.now())
    alert = Alert.objects.get(rule="certificate_renewal_failing", cleared_at__isnull=True)
    assert "ACME failed 3 times in a row for nas.lab.test, www.lab.test: The ACME server did not answer" in (
        alert.message
    )
    assert _served(here["https"])[0] == served, "the certificate in use stays"

    Acme.objects.filter(pk=1).update(directory=pebble["directory"])
    assert run_queued(services.acme_renew_due, now=when) is True
    assert Acme.objects.get().failures == 0
    alerts_evaluate(host=None, now=timezone.now())
    assert not Alert.objects.filter(rule="certificate_renewal_failing", cleared_at__isnull=True).exists()


def test_an_imported_certificate_stops_the_renewals(here, pebble, run_queued, admin_user):
    op = _order(run_queued, admin_user, pebble)
    assert op.status == "succeeded", op.message
    pki = Pki(datetime.datetime.now(datetime.UTC))
    op = run_queued(
        services.certificate_import_start,
        user=admin_user,
        certificate=pki.full,
        private_key=pki.key,
        name="nas.example.org",
    )
    assert op.status == "succeeded", op.message
    assert "ACME renewals stopped" in op.log and Acme.objects.get().renew is False
    assert services.acme_renew_due(Acme.objects.get().renew_after + datetime.timedelta(days=1)) is False


def test_the_challenge_folder_is_roots_and_the_fronts_workers_read_it_only(here, pebble, run_queued, admin_user):
    tls.challenge_put("A" * 43, "A" * 43 + ".thumbprint")
    folder = tls.challenge_folder()
    st = folder.stat()
    assert st.st_uid == 0 and stat.S_IMODE(st.st_mode) == 0o750
    assert st.st_gid == Path(here["data"] / "front").stat().st_gid, "the front's workers' group"
    answer, body = _get(here["http"], f"/.well-known/acme-challenge/{'A' * 43}")
    assert answer.status == 200 and body == b"A" * 43 + b".thumbprint"
    assert answer.getheader("Content-Type") == "text/plain"
    for path in ("/.well-known/acme-challenge/..%2Fnginx.conf", "/.well-known/acme-challenge/short"):
        assert _get(here["http"], path)[0].status == 301, path  # not a token: never a file, the redirect to HTTPS
    assert _get(here["http"], f"/.well-known/acme-challenge/{'B' * 43}")[0].status == 404
    tls.challenges_clear()
    with pytest.raises(ValueError):
        tls.challenge_put("../../tls/key", "x")


def test_an_account_the_ca_forgot_is_made_again_and_hsts_on_keeps_a_private_cas_certificate_out(
    here, pebble, run_queued, admin_user
):
    op = _order(run_queued, admin_user, pebble)
    assert op.status == "succeeded", op.message
    known = Acme.objects.get().account
    forgotten = known.rsplit("/", 1)[0] + "/999999"  # an account URL this CA never made (as after its restart)
    Acme.objects.filter(pk=1).update(account=forgotten)
    op = _order(run_queued, admin_user, pebble)
    assert op.status == "succeeded", op.message
    assert Acme.objects.get().account == known, "the key's own account, found again by the key"

    served = Acme.objects.get().fingerprint
    tls.trust_set(True)
    try:
        op = _order(run_queued, admin_user, pebble)
        assert op.status == "failed" and op.message.startswith("HSTS is on and browsers would not trust this CA"), (
            op.message
        )
        assert tls.current().fingerprint == served and tls.state().hsts, "the certificate in use and HSTS stay"
    finally:
        tls.trust_set(False)
