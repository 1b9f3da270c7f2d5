"""Bonds and VLANs through the network change path, on a FakeHost answering with the lab guest's captured links
(its two data NICs free, one with addresses and routes; then bonded with a VLAN): every refusal names its field
and changes nothing; a change arms its restore, keeps networkd off its links, applies, waits for Keep; Keep
writes networkd's files and hands the links back; an unkept one is handed back after the host restored it."""

from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone

from appliance.choices import Role
from appliance.models import Operation, User
from tests.support.runners import FakeHost, captured
from tuning.models import ChangeSet, Link
from tuning.services import (
    bond_create_start,
    bond_delete_start,
    change_keep_start,
    changes_settle,
    link_mtu_start,
    links_refresh,
    network_revert_start,
    vlan_create_start,
    vlan_delete_start,
)

ADDR = ("ip", "-j", "-d", "-s", "addr", "show")
HOLD = "/run/systemd/network/04-tarn-hold-{}.network".format


@pytest.fixture
def admin(db):
    return User.objects.create_user("alice", password=None, role=Role.ADMIN)


@pytest.fixture
def fake(local_host, monkeypatch):
    host = FakeHost().install(monkeypatch)
    host.answer(*ADDR, stdout=captured("ip_addr_with_routes.json"))
    host.answer("ip", "-4", "-j", "route", "show", stdout=captured("ip_route_4.json"))
    host.answer("ip", "-6", "-j", "route", "show", stdout=captured("ip_route_6.json"))
    links_refresh(host=local_host, t=host.transport())
    host.reset()
    return host


@pytest.fixture
def bonded(local_host, fake):
    """The guest after a bond0 of its two data NICs with VLAN 42 on it, as Tarn's inventory has it."""
    fake.answer(*ADDR, stdout=captured("ip_addr_bond_vlan.json"))
    links_refresh(host=local_host, t=fake.transport())
    fake.reset()
    return fake


BOND = {"name": "bond0", "ports": ["enp0s17", "enp0s18"], "seconds": 60}


@pytest.mark.parametrize(
    "changes, field, words",
    [
        ({"ports": ["enp0s17"]}, "ports", "two NICs at least"),
        ({"ports": ["enp0s17", "enp0s17"]}, "ports", "enp0s17 is named more than once"),
        ({"ports": ["enp0s16", "enp0s17"]}, "ports", "enp0s16 carries the management connection"),
        ({"ports": ["lo", "enp0s17"]}, "ports", "not lo"),
        ({"ports": ["enp0s17", "enp0s99"]}, "ports", "has no link enp0s99"),
        ({"name": "enp0s17"}, "name", "has a link named enp0s17 already"),
        ({"name": "bond 0"}, "name", "An interface name"),
        ({"name": "bond0-with-a-long-name"}, "name", "An interface name"),
        ({"mode": "balance-rr"}, "mode", "One of 802.3ad, active-backup, balance-alb"),
        ({"miimon": 0}, "miimon", "From 10 to 1000 ms"),
        ({"lacp_rate": "fast"}, "lacp_rate", "For mode 802.3ad (LACP) only"),
        ({"mode": "802.3ad", "xmit_hash_policy": "layer9"}, "xmit_hash_policy", "One of layer2"),
        ({"seconds": 5}, "seconds", "Between 20 and 600 seconds"),
    ],
)
def test_a_bond_refused_names_the_field_and_nothing_starts(fake, local_host, admin, changes, field, words):
    with pytest.raises(ValidationError) as refused:
        bond_create_start(host=local_host, user=admin, **{**BOND, **changes})
    assert words in " ".join(refused.value.message_dict[field]), refused.value.message_dict
    assert not ChangeSet.objects.exists() and not Operation.objects.exists() and fake.calls == []


VLAN = {"link": "enp0s17", "vid": 42, "addresses": ["10.79.42.2/24"], "seconds": 60}


@pytest.mark.parametrize(
    "changes, field, words",
    [
        ({"vid": 0}, "vid", "A VLAN id from 1 to 4094"),
        ({"vid": 4095}, "vid", "A VLAN id from 1 to 4094"),
        ({"vid": 4096}, "vid", "A VLAN id from 1 to 4094"),
        ({"link": "lo"}, "link", "lo is a loopback link: a VLAN goes on a NIC, a bond or a bridge"),
        ({"link": "enp0s99"}, "link", "has no link enp0s99"),
        ({"addresses": ["10.77.0.2/24"]}, "addresses", "local has 10.77.0.2/24 (enp0s17) already"),
        ({"addresses": ["10.79.42.2"]}, "addresses", "an address with its prefix length"),
        ({"addresses": ["10.79.42.2/24", "10.79.42.2/24"]}, "addresses", "Each address once"),
        ({"name": "enp0s16"}, "name", "has a link named enp0s16 already"),
    ],
)
def test_a_vlan_refused_names_the_field_and_nothing_starts(fake, local_host, admin, changes, field, words):
    with pytest.raises(ValidationError) as refused:
        vlan_create_start(host=local_host, user=admin, **{**VLAN, **changes})
    assert words in " ".join(refused.value.message_dict[field]), refused.value.message_dict
    assert not ChangeSet.objects.exists() and fake.calls == []


def test_a_bond_arms_its_restore_keeps_networkd_off_its_links_then_applies(run_queued, fake, local_host, admin):
    cs = run_queued(bond_create_start, host=local_host, user=admin, **BOND)
    n = cs.pk
    assert cs.status == "pending" and cs.target["held"] is True, cs.message
    assert [m[:2] for m in fake.mutations] == [
        ["write_file", f"/run/tarn/restore-{n}.ip"],
        ["systemd-run", f"--unit=tarn-restore-{n}"],
        ["write_file", HOLD(n)],  # after the restore is armed: a worker lost now still leaves the host healing
        ["networkctl", "reload"],
        ["write_file", f"/run/tarn/apply-{n}.ip"],
        ["ip", "-batch"],
    ]
    assert fake.files[HOLD(n)].endswith("[Match]\nName=bond0 enp0s17 enp0s18\n\n[Link]\nUnmanaged=yes\n")
    assert fake.files[f"/run/tarn/apply-{n}.ip"].startswith(
        "link add name bond0 address 52:54:00:12:34:57 mtu 1500 type bond mode active-backup miimon 100\n"
    )
    restore = fake.files[f"/run/tarn/restore-{n}.ip"].splitlines()
    assert restore[0] == "link del dev bond0"
    # the addresses and the routes an admin made through the port, as they were read before anything changed
    assert "address replace 10.77.0.2/24 dev enp0s17" in restore
    assert "route replace 10.99.0.0/24 via 10.77.0.1 dev enp0s17 proto boot" in restore


def test_keeping_a_bond_writes_its_files_then_hands_the_links_back_to_networkd(run_queued, fake, local_host, admin):
    cs = run_queued(bond_create_start, host=local_host, user=admin, **BOND)
    fake.answer(*ADDR, stdout=captured("ip_addr_bond_vlan.json"))
    fake.reset()
    op = run_queued(change_keep_start, change_set=cs, user=admin)
    assert op.status == "succeeded", op.message
    order = [m[:2] for m in fake.mutations]
    d = "/etc/systemd/network/05-tarn-"
    assert order == [
        ["systemctl", "stop"],
        ["write_file", f"{d}bond0.netdev"],
        ["write_file", f"{d}bond0.network"],
        ["write_file", f"{d}enp0s17.network"],
        ["write_file", f"{d}enp0s18.network"],
        ["remove_file", HOLD(cs.pk)],  # Tarn's files are there before networkd looks again
        ["networkctl", "reload"],
    ]
    assert "Bond=bond0" in fake.files[f"{d}enp0s18.network"]
    assert HOLD(cs.pk) not in fake.files
    assert set(Link.objects.filter(managed=True).values_list("name", flat=True)) == {"bond0", "enp0s17", "enp0s18"}


def test_a_bond_left_unkept_is_handed_back_to_networkd_after_the_host_restored_it(run_queued, fake, local_host, admin):
    cs = run_queued(bond_create_start, host=local_host, user=admin, **BOND)
    ChangeSet.objects.filter(pk=cs.pk).update(deadline=timezone.now() - timedelta(seconds=10))
    fake.reset()
    with_queue = run_queued(changes_settle)
    assert with_queue == 1
    cs.refresh_from_db()
    op = Operation.objects.get(kind="tuning.release")
    assert cs.status == "rolled_back" and op.status == "succeeded", op.message
    assert fake.mutations[:2] == [["remove_file", HOLD(cs.pk)], ["networkctl", "reload"]]
    assert cs.target["held"] is False


def test_a_bond_the_host_refuses_is_put_back_at_once_and_handed_back(run_queued, fake, local_host, admin):
    fake.answer("ip", "-batch", returncode=2, stderr="Error: Device can not be enslaved while up.\n")
    cs = run_queued(bond_create_start, host=local_host, user=admin, **BOND)
    assert cs.status == "failed" and "enslaved while up" in cs.message and "original settings are back" in cs.message
    names = [m[:3] for m in fake.mutations]
    assert names.index(["ip", "-force", "-batch"]) < names.index(["remove_file", HOLD(cs.pk)])


def test_a_vlan_holds_only_itself_and_its_parent_keeps_its_address(run_queued, fake, local_host, admin):
    cs = run_queued(vlan_create_start, host=local_host, user=admin, **VLAN)
    assert cs.status == "pending", cs.message
    assert cs.title == "VLAN 42 on enp0s17 (enp0s17.42)"
    assert fake.files[HOLD(cs.pk)].endswith("Name=enp0s17.42\n\n[Link]\nUnmanaged=yes\n")
    assert fake.files[f"/run/tarn/apply-{cs.pk}.ip"] == (
        "link add link enp0s17 name enp0s17.42 mtu 1500 type vlan id 42\n"
        "address add 10.79.42.2/24 dev enp0s17.42\n"
        "link set dev enp0s17.42 up\n"
    )


def test_a_bond_carrying_a_vlan_or_in_use_is_not_deleted_and_the_name_must_be_typed(bonded, local_host, admin):
    with pytest.raises(ValidationError) as refused:
        bond_delete_start(host=local_host, user=admin, name="bond0", confirm="bond0", seconds=60)
    assert "bond0 carries bond0.42: delete the VLANs first" in refused.value.message_dict["name"][0]
    with pytest.raises(ValidationError) as refused:
        vlan_delete_start(host=local_host, user=admin, name="bond0.42", confirm="bond0.4", seconds=60)
    assert "confirm" in refused.value.message_dict
    with pytest.raises(ValidationError) as refused:
        vlan_delete_start(host=local_host, user=admin, name="bond0", confirm="bond0", seconds=60)
    assert refused.value.message_dict["name"] == ["bond0 is not a VLAN."]
    with pytest.raises(ValidationError) as refused:  # a port of a bond: its MTU is the bond's
        link_mtu_start(host=local_host, user=admin, link="enp0s18", mtu=9000, peers=[], seconds=60)
    assert "port of bond0" in refused.value.message_dict["link"][0]
    with pytest.raises(ValidationError) as refused:  # a VLAN above its parent's MTU
        link_mtu_start(host=local_host, user=admin, link="bond0.42", mtu=9000, peers=[], seconds=60)
    assert "raise bond0's first" in refused.value.message_dict["mtu"][0]
    assert not ChangeSet.objects.exists()


def test_a_bonds_mtu_is_set_on_the_bond_and_its_vlans_not_on_its_ports(run_queued, bonded, local_host, admin):
    cs = run_queued(link_mtu_start, host=local_host, user=admin, link="bond0", mtu=9000, peers=[], seconds=60)
    assert cs.apply_lines == ["link set dev bond0 mtu 9000", "link set dev bond0.42 mtu 9000"], cs.message
    assert cs.restore_lines[:2] == ["link set dev bond0.42 mtu 1500", "link set dev bond0 mtu 1500"]


def test_deleting_a_vlan_then_its_bond_and_reverting_makes_them_again(run_queued, bonded, local_host, admin):
    cs = run_queued(vlan_delete_start, host=local_host, user=admin, name="bond0.42", confirm="bond0.42", seconds=60)
    assert cs.status == "pending" and cs.apply_lines == ["link del dev bond0.42"], cs.message
    assert cs.restore_lines[:3] == [
        "link add link bond0 name bond0.42 mtu 1500 type vlan id 42",
        "address add 10.79.42.2/24 dev bond0.42",
        "link set dev bond0.42 up",
    ]
    ChangeSet.objects.filter(pk=cs.pk).update(status="kept")
    cs.refresh_from_db()
    Link.objects.filter(name="bond0.42").delete()
    again = network_revert_start(change_set=cs, user=admin)
    assert (again.kind, again.target["vid"], again.target["addresses"]) == ("vlan", 42, ["10.79.42.2/24"])


def test_the_page_shows_a_bonds_mode_its_ports_states_and_its_vlan_with_their_forms(admin_client, bonded):
    page = admin_client.get("/tuning/").content.decode()
    assert "active-backup, check 100 ms; active enp0s17" in page
    assert "port of bond0\n      (backup)" in page and "id 42 on bond0" in page
    assert 'id="bond-form"' in page and 'id="vlan-form"' in page
    assert "Delete bond bond0" in page and "Delete vlan bond0.42" in page
    # the bond form offers the one data NIC left free: not the bond's ports, not the management link
    bond_form = page[page.index('id="bond-form"') : page.index('id="vlan-form"')]
    assert 'value="enp0s19"' in bond_form
    assert not any(f'value="{n}"' in bond_form for n in ("enp0s16", "enp0s17", "enp0s18"))


def test_the_api_starts_a_vlan_and_answers_its_change_set(admin_client, fake, local_host):
    response = admin_client.post(
        "/api/v1/links/vlan/", {"host": "local", **VLAN, "vid": 7}, content_type="application/json"
    )
    assert response.status_code == 202, response.content
    body = response.json()
    assert (body["kind"], body["title"], body["status"]) == ("vlan", "VLAN 7 on enp0s17 (enp0s17.7)", "applying")
    listed = admin_client.get("/api/v1/links/?host=local").json()
    rows = listed["results"] if isinstance(listed, dict) else listed
    assert {"parent", "perm_mac", "info"} <= set(rows[0])
