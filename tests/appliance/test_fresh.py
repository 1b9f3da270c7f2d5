"""The fresh confirmation every secret step asks for (appliance.auth.fresh): making, checking, restoring and downloading
a configuration backup, a new schedule passphrase, a key export and its download, a role dropped from the two-factor
policy, a certificate (and its key) to serve, HSTS turned on. With a session whose last confirmation is an hour old each is refused, page (sent to the confirmation) and
API (403 saying what to do), and nothing changes; right after a confirmation (a code, or the password for an admin
with no second factor) it runs; an API token passes (it was made with a fresh factor)."""

import datetime
import time

import pyotp
import pytest
from django.utils import timezone

from appliance import services as appliance_services
from appliance import twofactor
from appliance.models import Host, Operation, TotpDevice, TwoFactorPolicy
from backups import services as backup_services
from backups.models import Backup, BackupSchedule
from certificates.models import Acme
from encryption.models import KeyExport
from pools.models import Dataset, Pool
from tests.certificates.pki import Pki
from tests.conftest import PASSWORD
from tests.support.fresh import make_fresh, make_stale

PASS = "canary-0c1e correct horse battery"
CONFIRM = "/account/two-factor/confirm/"


@pytest.fixture
def secrets(settings, tmp_path, admin_user):
    """A backup checked already (its file on disk), a host with an encryption root and a key export of it, a
    two-factor policy."""
    settings.DATA_DIR = tmp_path
    settings.TARN_FRONT = True  # ACME answers the CA on the front's port 80
    backup = Backup.objects.create(
        name="tarn-20261128-010000-abcdef.tarnbackup",
        origin="manual",
        checked_at=timezone.now(),
        checked={"sha256": "0" * 64, "made_here": True},
    )
    backup_services.path_of(backup).parent.mkdir(parents=True, exist_ok=True)
    backup_services.path_of(backup).write_bytes(b"sealed backup bytes")
    host = Host.objects.create(name="nas1", address="10.0.0.5", facts={"zfs_version": "zfs-2.3.2"})
    now = timezone.now()
    pool = Pool.objects.create(host=host, name="tank", guid="1", state="ONLINE", size=4 << 30, observed_at=now)
    props = {"encryption": "aes-256-gcm", "encryptionroot": "tank/k", "keystatus": "available", "keyformat": "hex"}
    props = {k: {"value": v, "source": "local", "from": ""} for k, v in props.items()}
    Dataset.objects.create(host=host, pool=pool, name="tank/k", type="filesystem", properties=props, observed_at=now)
    export = KeyExport.objects.create(host=host, user=admin_user, roots=["tank/k"], data=b"age-sealed keys")
    TwoFactorPolicy.objects.create(required_roles=["operator"])
    return {"backup": backup, "export": export, "host": host}


def _state():
    """What the secret steps change: operations queued, exports left, the policy, the schedule's key."""
    schedule = BackupSchedule.objects.first()
    return (
        Operation.objects.count(),
        KeyExport.objects.count(),
        TwoFactorPolicy.objects.get().required_roles,
        schedule.recipient if schedule else "",
        Acme.objects.filter(renew=True).count(),
    )


_PKI = Pki(datetime.datetime.now(datetime.UTC))  # the service checks against the clock
CERTIFICATE = {"name": "nas.example.org", "certificate": _PKI.full.decode(), "private_key": _PKI.key.decode()}
ACME = {"directory": "https://acme.lab.test/dir", "names": "nas.lab.test", "email": "", "roots": "", "agree": "on"}
SCHEDULE = {"every": "day", "weekday": 6, "day": 1, "hour": 1, "keep": 7}


def pages(s):
    b, e = s["backup"], s["export"]
    return [
        ("post", "/backups/now/", {"passphrase": PASS, "passphrase_confirm": PASS}),
        ("post", "/backups/schedule/", {**SCHEDULE, "passphrase": PASS, "passphrase_confirm": PASS}),
        ("post", f"/backups/{b.pk}/check/", {"passphrase": PASS}),
        ("post", f"/backups/{b.pk}/restore/", {"passphrase": PASS, "confirm": b.name}),
        ("get", f"/backups/{b.pk}/download/", None),
        ("post", "/encryption/export/", {"roots": ["tank/k"], "confirm": "tank/k"} | _export_passphrase()),
        ("post", f"/encryption/exports/{e.pk}/download/", {}),
        ("post", "/account/two-factor/policy/", {"required_roles": []}),
        ("post", "/certificates/import/", CERTIFICATE),
        ("post", "/certificates/trust/", {"trusted": "on"}),
        ("post", "/certificates/acme/", ACME),
        ("post", "/certificates/acme/stop/", {}),
    ]


def apis(s):
    b, e = s["backup"], s["export"]
    return [
        ("post", "/api/v1/config-backups/now/", {"passphrase": PASS, "passphrase_confirm": PASS}),
        ("put", "/api/v1/config-backup-schedule/", {"passphrase": PASS, "passphrase_confirm": PASS}),
        ("post", f"/api/v1/config-backups/{b.pk}/check/", {"passphrase": PASS}),
        ("post", f"/api/v1/config-backups/{b.pk}/restore/", {"passphrase": PASS, "confirm": b.name}),
        ("get", f"/api/v1/config-backups/{b.pk}/download/", None),
        ("post", "/api/v1/encryption-roots/export/", {"host": "nas1", "confirm": "nas1"} | _export_passphrase()),
        ("post", "/api/v1/certificate/import/", CERTIFICATE),
        ("post", "/api/v1/certificate/trust/", {"trusted": True}),
        ("post", "/api/v1/certificate/acme/", ACME | {"agree": True}),
        ("post", "/api/v1/certificate/acme/stop/", {}),
        ("post", f"/api/v1/key-exports/{e.pk}/download/", {}),  # last: the token's pass skips it (taken already)
    ]


def _export_passphrase():
    return {"export_passphrase": PASS, "export_passphrase_confirm": PASS}


def _send(client, method, url, data, api=False):
    if api and data is not None:
        return getattr(client, method)(url, data, content_type="application/json")
    return getattr(client, method)(url, data) if data is not None else getattr(client, method)(url)


def _ran(response) -> bool:
    """The step ran (it answered as it does when allowed): an operation to follow, the file, the page back. The
    operation is then marked done, so the next step is not refused as waiting for it."""
    Operation.objects.update(status="succeeded")
    if response.status_code in (200, 202):
        return True
    return response.status_code == 302 and not response["Location"].startswith(CONFIRM)


def test_each_secret_page_asks_for_a_fresh_confirmation_and_runs_right_after_one(secrets, admin_client):
    admin_client.post("/hosts/switch/", {"host": secrets["host"].pk})
    for method, url, data in pages(secrets):
        make_stale(admin_client)
        before = _state()
        response = _send(admin_client, method, url, data, api=False)
        assert response.status_code == 302 and response["Location"].startswith(CONFIRM), (url, response.status_code)
        assert _state() == before, url  # nothing queued, taken or changed
        back = response["Location"].split("next=", 1)[1]
        assert back == (url.replace("/", "%2F") if method == "get" else "%2F"), back  # a GET comes back to itself
        make_fresh(admin_client)
        response = _send(admin_client, method, url, data, api=False)
        assert _ran(response), (url, response.status_code, response.content[:300])
        assert _state() != before or method == "get", url
    assert not KeyExport.objects.exists() and TwoFactorPolicy.objects.get().required_roles == []


def test_the_page_comes_back_to_the_form_it_was_sent_from(secrets, admin_client):
    make_stale(admin_client)
    response = admin_client.post(
        "/backups/now/", {"passphrase": PASS, "passphrase_confirm": PASS}, HTTP_REFERER="http://testserver/backups/"
    )
    assert response["Location"] == f"{CONFIRM}?next=%2Fbackups%2F"
    response = admin_client.post(
        "/backups/now/", {"passphrase": PASS, "passphrase_confirm": PASS}, HTTP_REFERER="https://evil.example/x/"
    )
    assert response["Location"] == f"{CONFIRM}?next=%2F"  # never another site


def test_each_secret_api_call_asks_a_session_for_a_fresh_confirmation_and_a_token_passes(secrets, admin_client):
    token_client = _token_client(secrets)
    for method, url, data in apis(secrets):
        make_stale(admin_client)
        before = _state()
        response = _send(admin_client, method, url, data, api=True)
        assert response.status_code == 403, (url, response.status_code)
        assert "fresh confirmation" in response.json()["detail"] and CONFIRM in response.json()["detail"]
        assert _state() == before, url
        make_fresh(admin_client)
        assert _ran(_send(admin_client, method, url, data, api=True)), url
    KeyExport.objects.create(host=secrets["host"], roots=["tank/k"], data=b"again")
    for method, url, data in apis(secrets)[:-1]:  # the export's download: taken above already
        assert _ran(_send(token_client, method, url, data, api=True)), url


def _token_client(secrets):
    from django.test import Client  # noqa: PLC0415 - a client with no session at all

    _, key = appliance_services.api_token_create(user=secrets["export"].user, name="script")
    return Client(HTTP_AUTHORIZATION=f"Bearer {key}")


def test_a_schedule_saved_without_a_new_passphrase_and_a_role_added_to_the_policy_ask_nothing(secrets, admin_client):
    make_stale(admin_client)
    response = admin_client.post("/backups/schedule/", SCHEDULE)
    assert _ran(response) or response.status_code == 400, response.status_code
    assert not response.get("Location", "").startswith(CONFIRM)
    response = admin_client.post("/account/two-factor/policy/", {"required_roles": ["operator", "viewer"]})
    assert response["Location"] == "/account/two-factor/users/"
    assert TwoFactorPolicy.objects.get().required_roles == ["operator", "viewer"]
    response = admin_client.put("/api/v1/config-backup-schedule/", {"keep": 9}, content_type="application/json")
    assert response.status_code == 200 and BackupSchedule.objects.get().keep == 9


def test_an_admin_without_a_second_factor_confirms_with_the_password(secrets, admin_client, settings):
    settings.TARN_LOGIN_MAX_FAILURES = 20
    url = f"/backups/{secrets['backup'].pk}/download/"
    make_stale(admin_client)
    response = admin_client.get(url)
    page = admin_client.get(response["Location"])
    assert 'name="password"' in page.content.decode() and 'name="otp_token"' not in page.content.decode()
    wrong = admin_client.post(response["Location"], {"password": "not-the-password"})
    assert wrong.status_code == 400 and "Wrong password" in wrong.content.decode()
    assert admin_client.get(url).status_code == 302
    right = admin_client.post(response["Location"], {"password": PASSWORD})
    assert right.status_code == 302 and right["Location"] == url
    download = admin_client.get(url)
    assert download.status_code == 200
    assert b"".join(download.streaming_content) == backup_services.path_of(secrets["backup"]).read_bytes()


def test_an_admin_with_a_second_factor_confirms_with_it_not_the_password(secrets, admin_client, admin_user):
    secret = pyotp.random_base32()
    TotpDevice.objects.create(user=admin_user, sealed_secret=twofactor._seal(secret), confirmed_at=timezone.now())
    url = f"/backups/{secrets['backup'].pk}/download/"
    make_stale(admin_client)
    asked = admin_client.get(url)["Location"]
    response = admin_client.post(asked, {"password": PASSWORD})
    assert response.status_code == 400 and admin_client.get(url).status_code == 302
    response = admin_client.post(asked, {"otp_token": pyotp.TOTP(secret).at(time.time())})
    assert response.status_code == 302 and response["Location"] == url
    assert admin_client.get(url).status_code == 200


def test_a_confirmation_counts_for_five_minutes(secrets, admin_client):
    url = f"/backups/{secrets['backup'].pk}/download/"
    make_stale(admin_client, 290)
    assert admin_client.get(url).status_code == 200
    make_stale(admin_client, 310)
    assert admin_client.get(url).status_code == 302
