"""Bonds and VLANs in the host layer, on `ip -j -d -s addr show` captured in the lab guest (a bond of its two data
NICs with VLAN 42 on it, and the NICs free with their addresses and routes): what is read, the `ip -batch` lines
that make and undo them, the networkd files that keep them, and every refusal before a line exists."""

import pytest

from hostlib import net
from tests.support.runners import FakeHost, captured


@pytest.fixture
def bonded() -> dict[str, net.Link]:
    return {x.name: x for x in net.parse_links(captured("ip_addr_bond_vlan.json"))}


@pytest.fixture
def free() -> dict[str, net.Link]:
    return {x.name: x for x in net.parse_links(captured("ip_addr_with_routes.json"))}


def test_a_bond_its_ports_and_its_vlan_read_as_the_kernel_has_them(bonded):
    bond, first, second, vlan = bonded["bond0"], bonded["enp0s17"], bonded["enp0s18"], bonded["bond0.42"]
    assert (bond.kind, bond.mac, [a.cidr for a in bond.static_addresses]) == (
        "bond",
        "52:54:00:12:34:57",
        ["10.77.0.2/24"],
    )
    assert bond.info == {
        "mode": "active-backup",
        "miimon": 100,
        "lacp_rate": "",
        "xmit_hash_policy": "",
        "active": "enp0s17",
    }
    # every port carries the bond's MAC; the second's own is read from permaddr
    assert (first.mac, first.own_mac, first.master) == ("52:54:00:12:34:57", "52:54:00:12:34:57", "bond0")
    assert (second.mac, second.own_mac, second.master) == ("52:54:00:12:34:57", "52:54:00:12:34:58", "bond0")
    assert (first.info["bond_state"], second.info["bond_state"], second.info["mii_status"]) == (
        "ACTIVE",
        "BACKUP",
        "UP",
    )
    assert (vlan.kind, vlan.parent, vlan.info["id"], [a.cidr for a in vlan.static_addresses]) == (
        "vlan",
        "bond0",
        42,
        ["10.79.42.2/24"],
    )
    assert net.BondOptions.of(bond) == net.BondOptions("active-backup", 100)


def test_a_bond_takes_its_ports_down_in_and_its_restore_gives_each_its_own_back(free):
    ports = [free["enp0s17"], free["enp0s18"]]
    apply, restore = net.bond_lines("bond0", ports, net.BondOptions("802.3ad", 100, "fast", "layer3+4"))
    assert apply == [
        "link add name bond0 address 52:54:00:12:34:57 mtu 1500 type bond mode 802.3ad miimon 100 lacp_rate fast "
        "xmit_hash_policy layer3+4",
        "address flush dev enp0s17 scope global",
        "link set dev enp0s17 down",  # the kernel refuses to enslave a link that is up
        "link set dev enp0s17 master bond0",
        "link set dev enp0s17 up",
        "address flush dev enp0s18 scope global",
        "link set dev enp0s18 down",
        "link set dev enp0s18 master bond0",
        "link set dev enp0s18 up",
        "address add 10.77.0.2/24 dev bond0",
        "address add fd77::2/64 dev bond0",
        "link set dev bond0 up",
    ]
    assert restore == [
        "link del dev bond0",
        "link set dev enp0s17 nomaster",
        "link set dev enp0s17 mtu 1500",
        "link set dev enp0s17 up",
        "address add 10.77.0.2/24 dev enp0s17",
        "address add fd77::2/64 dev enp0s17",
        "link set dev enp0s18 nomaster",
        "link set dev enp0s18 mtu 1500",
        "link set dev enp0s18 up",
    ]


def test_deleting_a_bond_gives_its_address_to_its_first_port_and_the_restore_makes_it_as_it_was(bonded):
    bond = bonded["bond0"]
    apply, restore = net.unbond_lines(bond, [bonded["enp0s18"], bonded["enp0s17"]])
    assert apply == [
        "link del dev bond0",
        "link set dev enp0s17 up",
        "link set dev enp0s18 up",
        "address add 10.77.0.2/24 dev enp0s17",
    ]
    assert restore[:2] == [
        "address del 10.77.0.2/24 dev enp0s17",
        "link add name bond0 address 52:54:00:12:34:57 mtu 1500 type bond mode active-backup miimon 100",
    ]
    assert restore[-2:] == ["address add 10.77.0.2/24 dev bond0", "link set dev bond0 up"]
    assert "link set dev enp0s18 master bond0" in restore


@pytest.mark.parametrize(
    "options, field",
    [
        (net.BondOptions("balance-rr"), "mode"),
        (net.BondOptions("active-backup", 5), "miimon"),
        (net.BondOptions("active-backup", 1001), "miimon"),
        (net.BondOptions("active-backup", True), "miimon"),
        (net.BondOptions("active-backup", 100, "fast"), "lacp_rate"),  # LACP's only
        (net.BondOptions("802.3ad", 100, "quick"), "lacp_rate"),
        (net.BondOptions("802.3ad", 100, "", "layer5"), "xmit_hash_policy"),
        (net.BondOptions("balance-alb", 100, "", "layer3+4"), "xmit_hash_policy"),
    ],
)
def test_a_bond_option_out_of_range_is_refused_naming_it(options, field):
    with pytest.raises(ValueError, match=f"^{field}: "):
        options.checked()


def test_a_bond_of_one_nic_or_a_nic_twice_is_refused(free):
    with pytest.raises(ValueError, match="two NICs"):
        net.bond_lines("bond0", [free["enp0s17"]], net.BondOptions())
    with pytest.raises(ValueError, match="named twice: enp0s17"):
        net.bond_lines("bond0", [free["enp0s17"], free["enp0s17"]], net.BondOptions())


def test_a_vlan_is_made_on_its_parent_with_its_addresses_and_its_restore_deletes_it(free):
    apply, restore = net.vlan_lines(free["enp0s17"], 42, "enp0s17.42", ["10.79.42.2/24", "fd79::2/64"])
    assert apply == [
        "link add link enp0s17 name enp0s17.42 mtu 1500 type vlan id 42",
        "address add 10.79.42.2/24 dev enp0s17.42",
        "address add fd79::2/64 dev enp0s17.42",
        "link set dev enp0s17.42 up",
    ]
    assert restore == ["link del dev enp0s17.42"]


def test_deleting_a_vlan_is_undone_by_making_it_again_with_its_id_mtu_and_addresses(bonded):
    assert net.unvlan_lines(bonded["bond0.42"]) == (
        ["link del dev bond0.42"],
        [
            "link add link bond0 name bond0.42 mtu 1500 type vlan id 42",
            "address add 10.79.42.2/24 dev bond0.42",
            "link set dev bond0.42 up",
        ],
    )


@pytest.mark.parametrize("vid", [0, 4095, 4096, -1, True, "42"])
def test_a_vlan_id_outside_1_to_4094_is_refused(free, vid):
    with pytest.raises(ValueError, match="VLAN id from 1 to 4094"):
        net.vlan_lines(free["enp0s17"], vid, "enp0s17.x", [])


def test_a_vlan_on_the_loopback_or_above_its_parents_mtu_is_refused(free):
    with pytest.raises(ValueError, match="not on a loopback"):
        net.vlan_lines(free["lo"], 42, "lo.42", [])
    with pytest.raises(ValueError, match=r"MTU \(9000\) cannot exceed enp0s17's \(1500\)"):
        net.vlan_lines(free["enp0s17"], 42, "enp0s17.42", [], mtu=9000)


@pytest.mark.parametrize(
    "cidr", ["10.79.42.2", "10.79.42.2/33", "127.0.0.2/8", "224.0.0.1/4", "0.0.0.0/0", "fe80::1%eth0/64", "x/24", ""]
)
def test_a_vlan_address_must_be_a_unicast_address_with_a_prefix(free, cidr):
    with pytest.raises(ValueError):
        net.vlan_lines(free["enp0s17"], 42, "enp0s17.42", [cidr])


def test_a_vlan_name_is_parent_dot_id_where_it_fits_in_15_bytes():
    assert net.vlan_name("enp0s17", 42) == "enp0s17.42"
    assert net.vlan_name("enx001122334455", 4094) == "vlan4094"


def test_an_mtu_goes_up_from_the_bottom_of_the_stack_and_down_from_the_top(bonded):
    bond, vlan = bonded["bond0"], bonded["bond0.42"]
    apply, restore = net.stack_mtu_lines(bond, [], [vlan], 9000)
    assert apply == ["link set dev bond0 mtu 9000", "link set dev bond0.42 mtu 9000"]
    assert restore == ["link set dev bond0.42 mtu 1500", "link set dev bond0 mtu 1500"]
    apply, restore = net.stack_mtu_lines(bond, [], [vlan], 1400)
    assert apply == ["link set dev bond0.42 mtu 1400", "link set dev bond0 mtu 1400"]
    assert restore == ["link set dev bond0 mtu 1500", "link set dev bond0.42 mtu 1500"]


def test_networkd_keeps_a_bond_its_ports_by_their_own_mac_and_its_vlan(bonded):
    links = [bonded[n] for n in ("bond0", "bond0.42", "enp0s17", "enp0s18")]
    files = net.render_networkd(links)
    d = "/etc/systemd/network/05-tarn-"
    assert sorted(files) == [
        f"{d}bond0.42.netdev", f"{d}bond0.42.network", f"{d}bond0.netdev", f"{d}bond0.network",
        f"{d}enp0s17.network", f"{d}enp0s18.network",
    ]  # fmt: skip
    body = {path: text.split("\n", 1)[1] for path, text in files.items()}  # past the header
    assert body[f"{d}bond0.netdev"] == (
        "[NetDev]\nName=bond0\nKind=bond\nMACAddress=52:54:00:12:34:57\nMTUBytes=1500\n\n"
        "[Bond]\nMode=active-backup\nMIIMonitorSec=100ms\n"
    )
    assert body[f"{d}bond0.network"] == (
        "[Match]\nName=bond0\nType=bond\n\n[Link]\nMTUBytes=1500\n\n[Network]\nAddress=10.77.0.2/24\n"
        "LinkLocalAddressing=ipv6\nIPv6AcceptRA=no\nConfigureWithoutCarrier=yes\nVLAN=bond0.42\n"
    )
    # the second port is found by its own MAC, not the bond's it carries now; the bond sets the ports' MTU
    assert body[f"{d}enp0s18.network"] == (
        "[Match]\nPermanentMACAddress=52:54:00:12:34:58\nType=ether\n\n"
        "[Network]\nBond=bond0\nLinkLocalAddressing=no\nIPv6AcceptRA=no\n"
    )
    assert body[f"{d}bond0.42.netdev"] == "[NetDev]\nName=bond0.42\nKind=vlan\nMTUBytes=1500\n\n[VLAN]\nId=42\n"
    assert body[f"{d}bond0.42.network"].startswith("[Match]\nName=bond0.42\nType=vlan\n\n[Link]\nMTUBytes=1500\n\n")
    assert "Address=10.79.42.2/24" in body[f"{d}bond0.42.network"]


def test_networkd_files_are_refused_for_a_vlan_without_its_parent_or_a_port_without_its_bond(bonded):
    with pytest.raises(ValueError, match="bond0.42 is kept only with its parent bond0"):
        net.render_networkd([bonded["bond0.42"]])
    with pytest.raises(ValueError, match="enp0s18 is kept only with its bond bond0"):
        net.render_networkd([bonded["enp0s18"]])


def test_a_hold_is_a_runtime_file_naming_the_links_and_networkd_rereads_it(free):
    host = FakeHost()
    assert net.hold(host.transport(), 7, ["enp0s18", "bond0", "enp0s17"]) is True
    assert host.files["/run/systemd/network/04-tarn-hold-7.network"].endswith(
        "[Match]\nName=bond0 enp0s17 enp0s18\n\n[Link]\nUnmanaged=yes\n"
    )
    assert host.argvs[-1] == ["networkctl", "reload"]
    with pytest.raises(ValueError):
        net.hold(host.transport(), 8, ["bond0 enp0s3"])  # one name each: never a second word smuggled in
    host.reset()
    net.release(host.transport(), 7)
    assert host.mutations == [["remove_file", "/run/systemd/network/04-tarn-hold-7.network"], ["networkctl", "reload"]]
    host.reset()
    net.release(host.transport(), 7)  # released already: nothing to reload
    assert host.mutations == [["remove_file", "/run/systemd/network/04-tarn-hold-7.network"]]


def test_no_hold_where_networkd_does_not_run():
    host = FakeHost().answer("systemctl", "is-active", returncode=3)
    assert net.hold(host.transport(), 7, ["bond0"]) is False
    assert host.mutations == []
