"""iSCSI through Tarn's services and runner on a fake host: each refusal names its field and saves nothing; a
change renders the whole configuration from the rows and applies it in one Operation; CHAP secrets are sealed in
the database and never in an Operation's parameters or the audit; a zvol a LUN serves is not destroyed."""

import json

import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone

from appliance.models import AuditEntry, Operation
from hostlib import iscsi as host_iscsi
from iscsi import services
from iscsi.models import Initiator, Lun, Target
from pools.dependents import release
from pools.models import Dataset, Pool
from pools.services import dataset_destroy_start, dataset_set_start
from tests.support.runners import FakeHost

IQN = "iqn.2026-11.lan.office:nas1"
CLIENT = "iqn.1991-05.com.microsoft:client1"
SECRET, MUTUAL = "InitSecret-001", "TargSecret-002"


@pytest.fixture
def zvols(local_host):
    now = timezone.now()
    pool = Pool.objects.create(host=local_host, name="tank", guid="1", state="ONLINE", observed_at=now)
    for name, kind in [("tank/vol1", "volume"), ("tank/vol2", "volume"), ("tank/docs", "filesystem")]:
        Dataset.objects.create(host=local_host, pool=pool, name=name, type=kind, depth=1, observed_at=now)
    return pool


@pytest.fixture
def fake(monkeypatch):
    return FakeHost().install(monkeypatch)


def config(fake) -> dict:
    return json.loads(fake.files[host_iscsi.CONFIG])


def test_a_target_with_a_lun_and_a_chap_initiator_is_applied_whole(zvols, local_host, admin_user, fake, run_queued):
    op = run_queued(services.target_save_start, host=local_host, user=admin_user, iqn=IQN.upper())
    assert op.status == "succeeded", op.message
    target = Target.objects.get()
    assert target.iqn == IQN  # kept as LIO keeps it
    op = run_queued(services.lun_add_start, host=local_host, user=admin_user, target=target.pk, zvol="tank/vol1")
    assert op.status == "succeeded", op.message
    op = run_queued(services.initiator_save_start, host=local_host, user=admin_user, target=target.pk, iqn=CLIENT,
                    chap_user="client1", chap_secret=SECRET, mutual_user="nas", mutual_secret=MUTUAL)  # fmt: skip
    assert op.status == "succeeded", op.message
    (tpg,) = config(fake)["targets"][0]["tpgs"]
    (lun,) = Lun.objects.all()
    assert tpg["luns"] == [{"index": 0, "storage_object": f"/backstores/block/tarn-{lun.serial.replace('-', '')}"}]
    assert tpg["node_acls"][0]["chap_password"] == SECRET and tpg["node_acls"][0]["chap_mutual_password"] == MUTUAL
    acl = Initiator.objects.get()
    assert SECRET not in acl.chap_secret and MUTUAL not in acl.mutual_secret  # sealed
    everything = json.dumps([list(Operation.objects.values_list("params", "message")),
                             list(AuditEntry.objects.values_list("argv", "params"))], default=str)  # fmt: skip
    assert SECRET not in everything and MUTUAL not in everything
    assert [a[:2] for a in fake.argvs].count(["targetctl", "restore"]) == 3

    # a change that leaves the secrets empty keeps them
    op = run_queued(services.initiator_save_start, host=local_host, user=admin_user, target=target.pk, iqn=CLIENT,
                    chap_user="client1", mutual_user="nas", pk=acl.pk)  # fmt: skip
    assert op.status == "succeeded", op.message
    assert config(fake)["targets"][0]["tpgs"][0]["node_acls"][0]["chap_password"] == SECRET


@pytest.mark.parametrize(
    ("start", "given", "field"),
    [
        ("target_save_start", {"iqn": "iqn.2026-11.local:nas"}, "iqn"),
        ("target_save_start", {"iqn": IQN, "portals": "0.0.0.0:0"}, "portals"),
        ("target_save_start", {"iqn": IQN, "portals": "0.0.0.0:65536"}, "portals"),
        ("target_save_start", {"iqn": IQN, "portals": "nas.lan"}, "portals"),
        ("target_save_start", {"iqn": IQN, "portals": ""}, "portals"),
        ("target_save_start", {"iqn": IQN, "portals": "0.0.0.0\n127.0.0.1"}, "portals"),  # both on 3260
        ("target_save_start", {"iqn": IQN, "portals": "127.0.0.1:3260\n127.0.0.1"}, "portals"),  # twice
        ("lun_add_start", {"zvol": "tank/docs"}, "zvol"),  # a filesystem, not a zvol
        ("lun_add_start", {"zvol": "tank/vol9"}, "zvol"),
        ("lun_add_start", {"zvol": "tank/vol2", "number": 256}, "number"),
        ("lun_add_start", {"zvol": "tank/vol1"}, "zvol"),  # mapped already
        ("initiator_save_start", {"iqn": "eui.0123"}, "iqn"),
        ("initiator_save_start", {"iqn": CLIENT, "chap_user": "c", "chap_secret": "short"}, "chap_secret"),
        ("initiator_save_start", {"iqn": CLIENT, "chap_user": "c", "chap_secret": "x" * 17}, "chap_secret"),
        (
            "initiator_save_start",
            {"iqn": CLIENT, "chap_user": "c", "chap_secret": SECRET, "mutual_user": "n", "mutual_secret": SECRET},
            "mutual_secret",
        ),  # fmt: skip
    ],
)
def test_bad_input_is_refused_naming_its_field_and_nothing_changes(zvols, local_host, admin_user, fake, start, given,
                                                                   field):  # fmt: skip
    target = Target.objects.create(host=local_host, iqn="iqn.2026-11.lan.office:existing")
    Lun.objects.create(host=local_host, target=target, number=0, zvol="tank/vol1", serial="s")
    counts = (Target.objects.count(), Lun.objects.count(), Initiator.objects.count(), Operation.objects.count())
    if start != "target_save_start":
        given = {"target": target.pk, **given}
    with pytest.raises(ValidationError) as refused:
        getattr(services, start)(host=local_host, user=admin_user, **given)
    assert field in refused.value.message_dict
    assert counts == (Target.objects.count(), Lun.objects.count(), Initiator.objects.count(), Operation.objects.count())
    assert fake.argvs == []


def test_a_portal_on_an_address_the_host_lacks_fails_on_the_host_and_nothing_is_written(
    local_host, admin_user, fake, run_queued
):
    lo = [{"ifname": "lo", "addr_info": [{"local": "127.0.0.1", "prefixlen": 8}]}]
    fake.answer("ip", "-j", "-d", "-s", "addr", stdout=json.dumps(lo))
    op = run_queued(services.target_save_start, host=local_host, user=admin_user, iqn=IQN, portals="10.9.9.9")
    assert op.status == "failed" and "10.9.9.9 is not an address of this host" in op.message
    assert host_iscsi.CONFIG not in fake.files


def test_a_target_listens_on_each_of_its_portals(local_host, admin_user, fake, run_queued):
    """Two networks, one address of each (multipath), on the page and in what LIO restores."""
    lo = [
        {"ifname": "lo", "addr_info": [{"local": "127.0.0.1", "prefixlen": 8}, {"local": "127.0.0.2", "prefixlen": 8}]}
    ]
    fake.answer("ip", "-j", "-d", "-s", "addr", stdout=json.dumps(lo))
    op = run_queued(services.target_save_start, host=local_host, user=admin_user, iqn=IQN,
                    portals="127.0.0.1\n127.0.0.2:3261")  # fmt: skip
    assert op.status == "succeeded", op.message
    assert Target.objects.get().portal_texts == ["127.0.0.1:3260", "127.0.0.2:3261"]
    (tpg,) = config(fake)["targets"][0]["tpgs"]
    assert [(p["ip_address"], p["port"]) for p in tpg["portals"]] == [("127.0.0.1", 3260), ("127.0.0.2", 3261)]


def test_a_zvol_a_lun_serves_is_not_destroyed_until_the_lun_is_removed(zvols, local_host, admin_user, fake, run_queued):
    target = Target.objects.create(host=local_host, iqn=IQN)
    lun = Lun.objects.create(host=local_host, target=target, number=0, zvol="tank/vol1", serial="s")
    with pytest.raises(ValidationError, match=f"iSCSI LUN 0 of {IQN}"):
        dataset_destroy_start(host=local_host, user=admin_user, name="tank/vol1", confirm="tank/vol1")
    with pytest.raises(ValidationError, match="Type the zvol's name"):
        services.lun_remove_start(host=local_host, user=admin_user, pk=lun.pk, confirm="vol1")
    op = run_queued(services.lun_remove_start, host=local_host, user=admin_user, pk=lun.pk, confirm="tank/vol1")
    assert op.status == "succeeded" and config(fake)["storage_objects"] == []
    dataset_destroy_start(host=local_host, user=admin_user, name="tank/vol1", confirm="tank/vol1")


def test_an_edit_keeping_the_secrets_never_opens_them_in_the_web(zvols, local_host, admin_user, fake, monkeypatch):
    """Only the workers read the vault's identity: the page's service checks a kept secret by a stand-in."""
    target = Target.objects.create(host=local_host, iqn=IQN)
    services.initiator_save_start(host=local_host, user=admin_user, target=target.pk, iqn=CLIENT, chap_user="client1",
                                  chap_secret=SECRET, mutual_user="nas", mutual_secret=MUTUAL)  # fmt: skip
    acl = Initiator.objects.get()
    Operation.objects.update(status="succeeded")  # its apply ran (one operation a host at a time)

    def no_vault(sealed):
        raise AssertionError("the web opened a sealed secret")

    monkeypatch.setattr(services.vault, "unseal", no_vault)
    services.initiator_save_start(host=local_host, user=admin_user, target=target.pk, iqn=CLIENT, chap_user="client1",
                                  mutual_user="nas", pk=acl.pk)  # fmt: skip
    kept = Initiator.objects.get()
    assert (kept.chap_secret, kept.mutual_secret) == (acl.chap_secret, acl.mutual_secret)


def test_a_zvol_a_lun_serves_may_grow_but_not_shrink(zvols, local_host, admin_user, fake):
    Dataset.objects.filter(name="tank/vol1").update(properties={"volsize": {"value": 256 << 20}})
    target = Target.objects.create(host=local_host, iqn=IQN)
    Lun.objects.create(host=local_host, target=target, number=0, zvol="tank/vol1", serial="s")
    with pytest.raises(ValidationError, match="in use by iSCSI LUN 0") as refused:
        dataset_set_start(host=local_host, user=admin_user, name="tank/vol1", props={"volsize": "128M"})
    assert "volsize" in refused.value.message_dict and not Operation.objects.exists()
    dataset_set_start(host=local_host, user=admin_user, name="tank/vol1", props={"volsize": "512M"})


def _encrypted(name: str, key: str) -> dict:
    return {"encryption": {"value": "aes-256-gcm"}, "encryptionroot": {"value": name}, "keystatus": {"value": key}}


def test_a_locked_zvols_lun_is_left_out_and_locking_takes_it_offline_first(zvols, local_host, admin_user, fake):
    """LIO holds a served zvol open: its key would not unload. Locking its root takes the LUN out first (the
    encryption app's lock asks pools.dependents.release), unlocking brings it back; a zvol the inventory read locked
    is never in an apply (it would fail)."""
    Dataset.objects.filter(name="tank/vol1").update(properties=_encrypted("tank/vol1", "available"))
    target = Target.objects.create(host=local_host, iqn=IQN)
    Lun.objects.create(host=local_host, target=target, number=0, zvol="tank/vol1", serial="aa")
    Lun.objects.create(host=local_host, target=target, number=1, zvol="tank/vol2", serial="bb")
    t = fake.transport()

    def served():
        return [s["dev"] for s in config(fake)["storage_objects"]]

    assert release(host=local_host, t=t, roots=["tank/vol1"], locking=True) == [f"iSCSI LUN 0 of {IQN} (tank/vol1)"]
    assert served() == ["/dev/zvol/tank/vol2"]
    Dataset.objects.filter(name="tank/vol1").update(properties=_encrypted("tank/vol1", "unavailable"))
    assert [lun.zvol for t_ in services.configuration(local_host) for lun in t_.luns] == ["tank/vol2"]
    release(host=local_host, t=t, roots=["tank/vol1"], locking=False)  # unlocked: the inventory not read again yet
    assert served() == ["/dev/zvol/tank/vol1", "/dev/zvol/tank/vol2"]
    assert release(host=local_host, t=t, roots=["tank/docs"], locking=True) == []  # no LUN below: nothing done
