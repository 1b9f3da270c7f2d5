"""Tuning input as an attacker or a careless admin sends it (issue 23): a link is named exactly and is a NIC, bond,
VLAN or bridge; an MTU keeps IPv6 working; a sysctl value fits its kernel type; a bridge names each port once; no
IPv6 zone reaches a host; hardening switches and the TCP Fast Open key are not Tarn's; a ZFS parameter that risks
data needs its name typed again. Each refusal is a 400 naming the field with nothing started, and the worker and
hostlib check again."""

import pytest
from django.utils import timezone

from appliance.choices import Role
from appliance.models import Operation, User
from hostlib import iperf, kernel, net, nfs
from tests.support.runners import FakeHost
from tuning.models import ChangeSet, KernelState, Link, Setting
from tuning.services import kernel_refresh, links_refresh, setting_start, tuning_apply_start

V6 = {"cidr": "2001:db8::10/64", "family": "inet6", "dynamic": False, "scope": "global"}
V6_LINK_LOCAL = {"cidr": "fe80::5054:ff:fe00:3/64", "family": "inet6", "dynamic": False, "scope": "link"}
V4 = {"cidr": "192.0.2.10/24", "family": "inet", "dynamic": False, "scope": "global"}


def _link(host, name, kind="ether", addresses=(), min_mtu=68, **kw):
    return Link.objects.create(
        host=host,
        name=name,
        kind=kind,
        mac=f"52:54:00:00:00:{len(name):02x}",
        mtu=1500,
        min_mtu=min_mtu,
        max_mtu=9000,
        state="UP",
        up=True,
        observed_at=timezone.now(),
        addresses=list(addresses),
        **kw,
    )


@pytest.fixture
def inventory(local_host):
    _link(local_host, "lo", kind="loopback", min_mtu=None, addresses=[V4 | {"cidr": "127.0.0.1/8"}])
    _link(local_host, "eth1", addresses=[V4])
    _link(local_host, "eth2")
    _link(local_host, "eth3", addresses=[V6_LINK_LOCAL])  # IPv6 with only a link-local address still needs 1280
    _link(local_host, "eth4", addresses=[V6])
    _link(local_host, "eth5", min_mtu=1280)  # the driver's own minimum
    _link(local_host, "veth0", kind="veth")
    _link(local_host, "bond0", kind="bond")
    _link(local_host, "eth1.10", kind="vlan")
    KernelState.objects.create(
        host=local_host,
        observed_at=timezone.now(),
        sysctl={
            "net.core.rmem_max": "212992",
            "net.ipv4.tcp_notsent_lowat": "4294967295",
            "net.ipv4.tcp_syncookies": "1",
            "net.core.bpf_jit_harden": "0",
            "vm.mmap_min_addr": "65536",
            "vm.drop_caches": "0",
            "vm.swappiness": "60",
        },
        zfs={"zil_replay_disable": "0", "zfs_nocacheflush": "0", "zfs_txg_timeout": "5", "spa_load_verify_data": "1"},
    )
    return local_host


def post(client, url, data):
    return client.post(url, data, content_type="application/json")


def assert_refused(response, field, *words):
    assert response.status_code == 400, response.content
    assert field in response.json(), response.json()
    for word in words:
        assert word in " ".join(response.json()[field]), response.json()
    assert not Operation.objects.exists() and not ChangeSet.objects.exists()


# --- links and MTUs --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mtu", ["１５００", "٩٠٠٠", "9０00", "²"])
def test_an_mtu_in_other_digits_is_a_400_naming_mtu(admin_client, inventory, mtu):
    assert_refused(post(admin_client, "/api/v1/links/mtu/", {"host": "local", "link": "eth1", "mtu": mtu}), "mtu")


@pytest.mark.parametrize("link", ["lo", "veth0"])
def test_the_loopback_and_links_tarn_does_not_manage_are_refused(admin_client, inventory, link):
    response = post(admin_client, "/api/v1/links/mtu/", {"host": "local", "link": link, "mtu": 1500})
    assert_refused(response, "link", "NICs, bonds, VLANs and bridges")


@pytest.mark.parametrize("link", ["eth2", "bond0", "eth1.10"])
def test_a_nic_a_bond_and_a_vlan_take_an_mtu(admin_client, inventory, link):
    response = post(admin_client, "/api/v1/links/mtu/", {"host": "local", "link": link, "mtu": 1500})
    assert response.status_code == 202, response.content


@pytest.mark.parametrize("link", ["eth1 ", " eth1", "eth1\t", "eth1\n", "\u00a0eth1"])
def test_a_link_name_with_space_around_it_is_refused_not_trimmed(admin_client, inventory, link):
    assert_refused(post(admin_client, "/api/v1/links/mtu/", {"host": "local", "link": link, "mtu": 1500}), "link")


def test_the_mtu_page_refuses_a_name_with_a_trailing_space(admin_client, inventory):
    page = admin_client.post("/tuning/links/mtu/", {"link": "eth1 ", "mtu": "1500", "seconds": 60}, follow=True)
    assert "An interface name" in page.content.decode() and not ChangeSet.objects.exists()


@pytest.mark.parametrize("link", ["eth3", "eth4"])
def test_below_1280_is_refused_on_a_link_with_ipv6(admin_client, inventory, link):
    response = post(admin_client, "/api/v1/links/mtu/", {"host": "local", "link": link, "mtu": 1279})
    assert_refused(response, "mtu", "IPv6", "1280")


def test_below_1280_is_taken_on_an_ipv4_only_link(admin_client, inventory):
    response = post(admin_client, "/api/v1/links/mtu/", {"host": "local", "link": "eth1", "mtu": 1279})
    assert response.status_code == 202, response.content


def test_below_the_drivers_minimum_is_refused(admin_client, inventory):
    response = post(admin_client, "/api/v1/links/mtu/", {"host": "local", "link": "eth5", "mtu": 1279})
    assert_refused(response, "mtu", "from 1280 to 9000")


@pytest.mark.parametrize("peer", ["fe80::1%eth0", "fe80::1%25eth0", "fe80::1%1"])
def test_an_ipv6_zone_in_a_peer_is_refused_not_dropped(admin_client, inventory, peer):
    body = {"host": "local", "link": "eth1", "mtu": 1500, "peers": [peer]}
    assert_refused(post(admin_client, "/api/v1/links/mtu/", body), "peers")


def test_the_mtu_page_refuses_a_zone_in_a_peer(admin_client, inventory):
    body = {"link": "eth1", "mtu": "1500", "seconds": 60, "peers": "192.0.2.1 fe80::1%eth0"}
    page = admin_client.post("/tuning/links/mtu/", body, follow=True).content.decode()
    assert "without a zone" in page and not ChangeSet.objects.exists()


def test_a_zone_in_the_address_to_measure_is_refused(admin_client, inventory):
    cs = ChangeSet.objects.create(host=inventory, kind="profile", title="Base tuning", status="planned")
    response = post(admin_client, f"/api/v1/change-sets/{cs.pk}/apply/", {"measure": True, "address": "fe80::1%eth1"})
    assert response.status_code == 400 and "address" in response.json(), response.content
    assert not Operation.objects.exists()


@pytest.mark.parametrize("ports", [["eth1", "eth1"], ["eth1", "eth2", "eth1"]])
def test_a_port_named_twice_is_refused(admin_client, inventory, ports):
    response = post(admin_client, "/api/v1/links/bridge/", {"host": "local", "name": "br0", "ports": ports})
    assert_refused(response, "ports", "more than once")


@pytest.mark.parametrize("body", [{"name": "br0 ", "ports": ["eth1"]}, {"name": "br0", "ports": ["eth1 "]}])
def test_bridge_names_with_space_around_them_are_refused(admin_client, inventory, body):
    response = post(admin_client, "/api/v1/links/bridge/", {"host": "local", **body})
    assert response.status_code == 400 and set(response.json()) & {"name", "ports"}, response.content
    assert not ChangeSet.objects.exists()


# --- kernel and ZFS settings -----------------------------------------------------------------------------------------


def tunable(client, key, value, kind="sysctl", **extra):
    return post(client, "/api/v1/tunables/", {"host": "local", "kind": kind, "key": key, "value": value, **extra})


@pytest.mark.parametrize("value", ["2147483648", "99999999999", "4294967296"])
def test_an_int_sysctl_out_of_its_range_is_refused_before_anything_runs(admin_client, inventory, value):
    assert_refused(tunable(admin_client, "net.core.rmem_max", value), "value", "0 to 2147483647")


@pytest.mark.parametrize(
    ("key", "value"), [("net.core.rmem_max", "2147483647"), ("net.ipv4.tcp_notsent_lowat", "4294967295")]
)
def test_the_largest_int_is_taken_and_a_wider_sysctl_takes_more(admin_client, inventory, key, value):
    assert tunable(admin_client, key, value).status_code == 202


def test_a_range_the_kernel_enforces_is_named(admin_client, inventory):
    assert_refused(tunable(admin_client, "vm.swappiness", "201"), "value", "0 to 200")


@pytest.mark.parametrize("value", ["２１２９９２", "٢١٢٩٩٢", "212992\u2003", "1\x1c2"])
def test_a_value_in_other_digits_or_separators_never_reaches_sysctl(admin_client, inventory, value):
    assert_refused(tunable(admin_client, "net.core.rmem_max", value), "value")


@pytest.mark.parametrize(
    "key", ["vm.mmap_min_addr", "net.core.bpf_jit_harden", "net.ipv4.tcp_syncookies", "vm.drop_caches"]
)
def test_hardening_switches_and_actions_are_not_tarns_to_keep(admin_client, inventory, key):
    assert_refused(tunable(admin_client, key, "0"), "key", "Tarn does not change")


def test_the_tcp_fast_open_key_is_never_set(admin_client, inventory):
    response = tunable(admin_client, "net.ipv4.tcp_fastopen_key", "00000000-00000000-00000000-00000000")
    assert_refused(response, "key", "secret")


@pytest.mark.parametrize("key", ["zil_replay_disable", "zfs_nocacheflush"])
def test_a_durability_parameter_needs_its_name_typed_with_a_warning(admin_client, inventory, key):
    assert_refused(tunable(admin_client, key, "1", kind="zfs"), "confirm", "risks losing data", f"type {key}")
    assert_refused(tunable(admin_client, key, "1", kind="zfs", confirm="yes"), "confirm")
    assert_refused(tunable(admin_client, key, "1", kind="zfs", confirm=f"{key} "), "confirm")
    response = tunable(admin_client, key, "1", kind="zfs", confirm=key)
    assert response.status_code == 202, response.content
    assert ChangeSet.objects.get().target == {"confirmed": [key]}


@pytest.mark.parametrize(("key", "value"), [("zil_replay_disable", "0"), ("zfs_txg_timeout", "10")])
def test_a_durability_parameter_back_to_its_safe_value_and_txg_timeout_need_no_confirmation(
    admin_client, inventory, key, value
):
    assert tunable(admin_client, key, value, kind="zfs").status_code == 202


def test_the_settings_page_says_why_and_asks_for_the_confirmation(admin_client, inventory):
    body = {"kind": "zfs", "key": "zfs_nocacheflush", "value": "1", "confirm": ""}
    page = admin_client.post("/tuning/settings/", body, follow=True).content.decode()
    assert "power cut" in page and "type zfs_nocacheflush" in page and not ChangeSet.objects.exists()
    body["confirm"] = "zfs_nocacheflush"
    admin_client.post("/tuning/settings/", body)
    assert ChangeSet.objects.get().title == "zfs_nocacheflush = 1"


# --- again in the worker and in hostlib ------------------------------------------------------------------------------


@pytest.fixture
def admin(db):
    return User.objects.create_user("alice", password=None, role=Role.ADMIN)


@pytest.fixture
def fake(local_host, monkeypatch):
    host = FakeHost().install(monkeypatch)
    links_refresh(host=local_host, t=host.transport())
    kernel_refresh(host=local_host, t=host.transport())
    host.reset()
    return host


def test_the_fast_open_key_read_from_the_host_is_never_stored(fake, local_host):
    assert "net.ipv4.tcp_fastopen_key" in fake.sysctl  # the captured guest prints it
    assert "net.ipv4.tcp_fastopen_key" not in KernelState.objects.get(host=local_host).sysctl
    assert "net.ipv4.tcp_fastopen" in KernelState.objects.get(host=local_host).sysctl


def _planned(host, user, key, value, kind="zfs", **target) -> ChangeSet:
    """A planned change set of one setting, as if it had been saved before the service refused such values."""
    original = KernelState.objects.get(host=host).values(kind)[key]
    cs = ChangeSet.objects.create(host=host, kind="tunable", title=key, status="planned", target=target)
    Setting.objects.create(change_set=cs, host=host, kind=kind, key=key, original=original, value=value)
    return cs


def test_the_worker_refuses_an_unconfirmed_durability_setting_and_writes_nothing(run_queued, fake, local_host, admin):
    cs = run_queued(tuning_apply_start, change_set=_planned(local_host, admin, "zil_replay_disable", "1"), user=admin)
    assert cs.status == "failed" and "Confirm by typing zil_replay_disable" in cs.message
    assert fake.mutations == []


def test_the_worker_applies_a_confirmed_durability_setting(run_queued, fake, local_host, admin):
    planned = _planned(local_host, admin, "zil_replay_disable", "1", confirmed=["zil_replay_disable"])
    cs = run_queued(tuning_apply_start, change_set=planned, user=admin)
    assert cs.status == "applied", cs.message
    assert fake.mutations[0] == ["module_parameter", "zfs", "zil_replay_disable", "1"]


def test_the_worker_refuses_a_hardening_switch_and_an_out_of_range_value(run_queued, fake, local_host, admin):
    for key, value in (("net.ipv4.tcp_syncookies", "0"), ("net.core.rmem_max", "2147483648")):
        cs = run_queued(tuning_apply_start, change_set=_planned(local_host, admin, key, value, "sysctl"), user=admin)
        assert cs.status == "failed" and key in cs.message
    assert fake.mutations == []


def test_a_setting_start_with_a_refused_key_is_refused_before_any_row(local_host, admin):
    KernelState.objects.create(host=local_host, observed_at=timezone.now(), sysctl={"vm.mmap_min_addr": "65536"})
    with pytest.raises(Exception) as refused:
        setting_start(host=local_host, user=admin, kind="sysctl", key="vm.mmap_min_addr", value="0", reason="")
    assert "key" in refused.value.message_dict and not ChangeSet.objects.exists()


def test_hostlib_refuses_out_of_range_and_hardening_writes_but_restores_the_hosts_own_value():
    t = FakeHost().transport()
    with pytest.raises(ValueError, match="0 to 2147483647"):
        kernel.write(t, "sysctl", "net.core.rmem_max", "2147483648")
    with pytest.raises(ValueError, match="Tarn does not change"):
        kernel.write(t, "sysctl", "vm.mmap_min_addr", "0")
    with pytest.raises(ValueError, match="secret"):
        kernel.write(t, "sysctl", "net.ipv4.tcp_fastopen_key", "0")
    kernel.write(t, "sysctl", "vm.mmap_min_addr", "65536", restoring=True)  # a revert puts the host's own back
    kernel.write(t, "sysctl", "vm.drop_caches", "3")  # an action, taken at runtime (a benchmark's), never kept
    assert [c.argv[-1] for c in t.fake.calls if c.mutating] == ["vm.mmap_min_addr=65536", "vm.drop_caches=3"]


def test_the_boot_file_never_carries_a_refused_key():
    kept = {"vm.swappiness": "10", "vm.mmap_min_addr": "0", "vm.drop_caches": "3", "net.ipv4.tcp_fastopen_key": "0"}
    text = kernel.render_sysctl(kept)
    assert text == kernel.HEADER + "vm.swappiness = 10\n"


def test_hostlib_checks_the_link_kind_ipv6_and_duplicate_ports_again():
    nic = net.Link("eth0", "ether", "52:54:00:00:00:01", 1500, 68, 9000, "UP", True, addresses=[net.Address(**V6)])
    lo = net.Link("lo", "loopback", "", 65536, None, None, "UNKNOWN", True)
    with pytest.raises(ValueError, match="NICs, bonds, VLANs and bridges"):
        net.check_mtu(lo, 1500)
    with pytest.raises(ValueError, match="IPv6"):
        net.check_mtu(nic, 1279)
    assert net.check_mtu(nic, 1280) == 1280
    with pytest.raises(ValueError, match="twice"):
        net.bridge_lines("br0", [nic, nic])


@pytest.mark.parametrize("address", ["fe80::1%eth0", "fe80::1%25eth0", "10.0.0.1%eth0"])
def test_hostlib_refuses_an_ipv6_zone_wherever_an_address_reaches_a_command(address):
    with pytest.raises(ValueError, match="zone"):
        net.check_address(address)
    with pytest.raises(ValueError):
        iperf.client_argv(address, seconds=5, reverse=False)
    with pytest.raises(ValueError):
        net.ping_df(FakeHost().transport(), address, 9000)
    with pytest.raises(ValueError, match="zone"):
        nfs.parse_client(address)
