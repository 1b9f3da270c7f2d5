"""Encryption roots left locked after a host came up: raised once per root, only the admin's minutes after the boot,
cleared on unlock; a root Tarn locked since is the admin's doing; the dashboard lists the locked roots with since
when, in the same few queries however many there are."""

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from analytics.models import Alert
from analytics.services import alerts_evaluate, rule_save
from appliance.models import Host, Operation
from encryption import selectors
from encryption.alerts import LOCKED
from pools.models import Dataset, Pool

BOOTED = timezone.now().replace(microsecond=0) - timedelta(hours=1)


def _enc(root: str, key: str) -> dict:
    values = {"encryption": "aes-256-gcm", "encryptionroot": root, "keystatus": key, "keyformat": "passphrase"}
    values["keylocation"] = "prompt"
    return {k: {"value": v, "source": "local", "from": ""} for k, v in values.items()}


def _dataset(host, name: str, root: str = "", key: str = "unavailable"):
    pool = Pool.objects.get_or_create(
        host=host, name=name.split("/")[0], defaults={"guid": name, "state": "ONLINE", "observed_at": timezone.now()}
    )[0]
    props = _enc(root or name, key) if key else {}
    Dataset.objects.create(host=host, pool=pool, name=name, type="filesystem", properties=props, observed_at=BOOTED)


def _unlock(host, root: str) -> None:
    for d in Dataset.objects.filter(host=host, properties__encryptionroot__value=root):
        d.properties["keystatus"]["value"] = "available"
        d.save(update_fields=["properties"])


@pytest.fixture
def host(db):
    host = Host.objects.create(name="nas1", address="10.0.0.5", facts={"btime": int(BOOTED.timestamp())})
    _dataset(host, "tank", key="")
    _dataset(host, "tank/vault")
    _dataset(host, "tank/vault/docs", root="tank/vault")
    _dataset(host, "tank/keyed", key="available")
    return host


def _evaluate(host, minutes: float) -> tuple[list, list]:
    raised, cleared = alerts_evaluate(host=host, now=BOOTED + timedelta(minutes=minutes), deliver=lambda *a: None)
    return [a for a in raised if a.rule == LOCKED.key], [a for a in cleared if a.rule == LOCKED.key]


def test_a_root_left_locked_is_raised_once_only_after_the_minutes_and_cleared_when_unlocked(host):
    assert _evaluate(host, 14) == ([], [])  # up 14 minutes: an admin may be typing the passphrase now
    (alert,), cleared = _evaluate(host, 16)
    assert not cleared and (alert.subject, alert.level) == ("tank/vault", "warning")
    assert alert.message == (
        "tank/vault (with tank/vault/docs) on nas1 is still locked 16 minutes after the host came up: unlock it on "
        "the Encryption page; its shares are off until then."
    )
    assert _evaluate(host, 17) == ([], [])  # raised once
    _unlock(host, "tank/vault")
    raised, (gone,) = _evaluate(host, 18)
    assert not raised and gone.pk == alert.pk
    assert not Alert.objects.filter(rule=LOCKED.key, cleared_at__isnull=True).exists()


def test_the_admins_minutes_are_the_ones_waited_and_a_root_gone_clears(host):
    rule_save(key=LOCKED.key, enabled=True, level="critical", threshold=60)
    assert _evaluate(host, 59) == ([], [])
    (alert,), _ = _evaluate(host, 61)
    assert alert.level == "critical" and "61 minutes" in alert.message
    Dataset.objects.filter(host=host, name__startswith="tank/vault").delete()  # destroyed, or its pool exported
    assert [a.pk for a in _evaluate(host, 62)[1]] == [alert.pk]


def test_a_root_tarn_locked_since_the_boot_is_left_alone_but_one_locked_before_it_is_not(host, admin_user):
    locked = Operation.objects.create(
        kind="encryption.lock",
        target="host:nas1:encryption:tank/vault",
        host=host,
        params={"root": "tank/vault", "force": False},
        status="succeeded",
        finished_at=BOOTED + timedelta(minutes=30),
    )
    assert _evaluate(host, 90) == ([], [])  # the admin locked it: no one forgot it
    (row,) = selectors.locked_roots(hosts=[host])
    assert (row["since"], row["kept"]) == (locked.finished_at, True)
    Operation.objects.filter(pk=locked.pk).update(finished_at=BOOTED - timedelta(days=1))  # then the host rebooted
    (alert,), _ = _evaluate(host, 91)
    assert alert.subject == "tank/vault"
    assert selectors.locked_roots(hosts=[host])[0]["since"] == BOOTED


def test_without_a_boot_time_or_with_the_host_unreachable_nothing_is_judged(host):
    Host.objects.filter(pk=host.pk).update(facts={"zfs_version": "2.3.2"})  # read before Tarn knew btime
    host.refresh_from_db()
    assert _evaluate(host, 600) == ([], [])
    Host.objects.filter(pk=host.pk).update(facts={"btime": int(BOOTED.timestamp())}, facts_error="ssh: timed out")
    host.refresh_from_db()
    assert _evaluate(host, 600) == ([], [])


def test_the_dashboard_shows_a_locked_root_with_since_when_and_nothing_once_unlocked(host, admin_client):
    page = admin_client.get("/").content.decode()
    assert 'id="locked-roots"' in page and 'data-root="tank/vault"' in page and 'href="/encryption/"' in page
    assert "since the host came up" in page and "1 dataset below it" in page
    assert 'data-root="tank/keyed"' not in page  # unlocked
    _unlock(host, "tank/vault")
    assert selectors.dashboard_locked(hosts=[host]) == {}
    assert 'id="locked-roots"' not in admin_client.get("/").content.decode()


def test_the_dashboard_panel_takes_the_same_queries_for_one_locked_root_or_many(host):
    def queries() -> int:
        with CaptureQueriesContext(connection) as seen:
            (_, panel), *_ = selectors.dashboard_locked(hosts=[host])["extra_panels"]
        return len(seen), len(panel["roots"])

    one = queries()
    for n in range(8):
        _dataset(host, f"tank/locked{n}")
        _dataset(host, f"tank/locked{n}/below", root=f"tank/locked{n}")
    many = queries()
    assert one == (2, 1) and many == (2, 9)
