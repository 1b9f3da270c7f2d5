"""Issue 41: alerts 30 and 7 days before the served certificate ends (thresholds the admin may change), cleared
by one that lasts longer."""

import datetime

import pytest

from analytics.models import Alert
from analytics.services import alerts_evaluate
from appliance import tls

pytestmark = pytest.mark.django_db
NOW = datetime.datetime(2026, 11, 29, 12, 0, tzinfo=datetime.UTC)


@pytest.fixture
def data(settings, tmp_path):
    settings.DATA_DIR = tmp_path / "var"
    (settings.DATA_DIR / "tls").mkdir(parents=True, mode=0o710)
    return settings.DATA_DIR


def _serve(data, days_left: float) -> None:
    """A certificate ending days_left after NOW, as the front's current one."""
    made = NOW - tls.LIFETIME + datetime.timedelta(days=days_left)
    cert, key = tls.self_signed(["nas.example.org"], ["192.0.2.10"], now=made)
    (data / "tls" / "cert.pem").write_bytes(cert)
    (data / "tls" / "key.pem").write_bytes(key)
    (data / "tls" / "key.pem").chmod(0o600)


def _active(now) -> set[str]:
    alerts_evaluate(host=None, now=now)
    return {a.rule for a in Alert.objects.filter(cleared_at__isnull=True)}


def test_thirty_days_before_a_warning_seven_days_before_a_critical_alert_a_new_certificate_clears_both(data):
    _serve(data, 40)
    assert _active(NOW) == set()
    _serve(data, 20)
    assert _active(NOW) == {"certificate_expiring"}
    alert = Alert.objects.get(rule="certificate_expiring")
    assert (
        alert.host is None
        and "nas.example.org, 192.0.2.10 expires in 20 days (on 2026-12-19 12:00 UTC)" in alert.message
    )
    _serve(data, 5)
    assert _active(NOW) == {"certificate_expiring", "certificate_expiring_soon"}
    assert Alert.objects.get(rule="certificate_expiring_soon").level == "critical"
    _serve(data, 300)
    assert _active(NOW) == set(), "a certificate that lasts clears both"


def test_an_expired_certificate_says_so(data):
    _serve(data, -2)
    assert _active(NOW) == {"certificate_expiring", "certificate_expiring_soon"}
    assert "has expired (on 2026-11-27 12:00 UTC)" in Alert.objects.get(rule="certificate_expiring_soon").message


def test_no_certificate_yet_no_alert(data):
    assert _active(NOW) == set()
