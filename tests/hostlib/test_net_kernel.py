"""Links, kernel tunables, iperf3 and networkd files: parsers on output captured from the lab, and the exact
`ip -batch` lines and files Tarn builds; hostile names and values are refused before any argv exists."""

from pathlib import Path

import pytest

from hostlib import iperf, kernel, net, systemd
from hostlib.errors import HostError
from hostlib.net import Address, Link
from hostlib.runner import CommandResult, LocalTransport, Transport
from tests.support.runners import FakeHost

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "host"


def read(name: str) -> str:
    return (FIXTURES / name).read_text()


def test_links_parse_from_the_lab_with_bridge_ports_addresses_and_mtu_ranges():
    links = {x.name: x for x in net.parse_links(read("ip_addr_details.json"))}
    assert set(links) == {"lo", "enp0s16", "enp0s17", "enp0s18", "br0"}
    data = links["enp0s17"]
    assert (data.kind, data.mtu, data.min_mtu, data.max_mtu) == ("ether", 1500, 68, 65535)
    assert [a.cidr for a in data.static_addresses] == ["10.77.0.2/24"]
    assert data.mac == "52:54:00:12:34:57" and data.up and data.counters["rx_packets"] >= 0
    assert links["br0"].kind == "bridge" and links["enp0s18"].master == "br0"
    assert links["lo"].kind == "loopback"
    mgmt = links["enp0s16"]  # DHCP from QEMU: dynamic, so never moved by hand
    assert any(a.dynamic and a.family == "inet" for a in mgmt.addresses) and not mgmt.static_addresses


def test_ethtool_outputs_parse():
    assert net.parse_driver(read("ethtool_driver.txt")) == "virtio_net"
    assert net.parse_speed(read("ethtool_settings.txt")) is None  # a virtual NIC says "Unknown!"
    assert net.parse_speed("\tSpeed: 10000Mb/s\n") == 10000
    assert net.parse_rings(read("ethtool_rings.txt")) == {"rx_max": 256, "tx_max": 256, "rx": 256, "tx": 256}
    features = net.parse_features(read("ethtool_features.txt"))
    assert features["tcp-segmentation-offload"] == "on" and features["large-receive-offload"] == "off [fixed]"


def test_sysctls_and_zfs_parameters_parse():
    values = kernel.parse_sysctl(read("sysctl_tunables.txt"))
    assert values["net.ipv4.tcp_rmem"] == "4096 131072 6291456"  # tabs become single spaces
    assert values["net.core.default_qdisc"] == "fq_codel" and values["vm.swappiness"] == "60"
    params = kernel.parse_parameters(read("zfs_parameters.txt"))
    assert params["zfs_txg_timeout"] == "5" and params["zfs_arc_max"] == "0" and len(params) > 300


@pytest.mark.parametrize(
    ("kind", "key"),
    [
        ("sysctl", "kernel.panic"),
        ("sysctl", "net.ipv4.ip_forward"),
        ("sysctl", "net.ipv4.conf.all.rp_filter"),
        ("sysctl", "net.core.rmem_max/../x"),
        ("sysctl", "-w"),
        ("sysctl", "vm.swappiness "),
        ("zfs", "../../kernel/x"),
        ("zfs", "zfs_arc_max;reboot"),
        ("zfs", "printk"),
        ("bogus", "vm.swappiness"),
    ],
)
def test_keys_outside_the_allowlist_are_refused(kind, key):
    with pytest.raises(ValueError):
        kernel.check_key(kind, key)


@pytest.mark.parametrize("value", ["1 2 3 4 5", "1\n2", "1;reboot", "a|b", "$(id)", "", "-1", "1.5", "CUBIC"])
def test_values_with_spaces_newlines_or_symbols_are_refused(value):
    with pytest.raises(ValueError):
        kernel.check_value(value)


def test_values_are_normalised_and_files_rendered_sorted():
    assert kernel.check_value("4096\t87380   67108864") == "4096 87380 67108864"
    text = kernel.render_sysctl({"vm.swappiness": "10", "net.core.rmem_max": "134217728"})
    assert text.splitlines()[1:] == ["net.core.rmem_max = 134217728", "vm.swappiness = 10"]
    assert kernel.render_modprobe({"zfs_txg_timeout": "5", "zfs_arc_max": "0"}).endswith(
        "options zfs zfs_arc_max=0 zfs_txg_timeout=5\n"
    )
    assert kernel.render_modprobe({}) == kernel.HEADER


@pytest.mark.parametrize("name", ["-br", "a/b", "..", ".", "a b", "toolongname12345", "", "eth0\n", "br;0"])
def test_interface_names_are_checked(name):
    with pytest.raises(ValueError):
        net.check_ifname(name)


def _nic(name, mac, mtu=1500, cidrs=(), master=""):
    return Link(
        name=name,
        kind="ether",
        mac=mac,
        mtu=mtu,
        min_mtu=68,
        max_mtu=9000,
        state="UP",
        up=True,
        master=master,
        addresses=[Address(c, "inet", False) for c in cidrs],
    )


def test_a_bridge_moves_the_addresses_and_its_restore_puts_them_back():
    a, b = _nic("enp0s17", "52:54:00:12:34:57", cidrs=["10.77.0.2/24"]), _nic("enp0s18", "52:54:00:12:34:58")
    apply, restore = net.bridge_lines("br0", [a, b])
    assert apply == [
        "link add name br0 address 52:54:00:12:34:57 mtu 1500 type bridge",
        "address del 10.77.0.2/24 dev enp0s17",
        "link set dev enp0s17 mtu 1500 master br0",
        "link set dev enp0s17 up",
        "link set dev enp0s18 mtu 1500 master br0",
        "link set dev enp0s18 up",
        "address add 10.77.0.2/24 dev br0",
        "link set dev br0 up",
    ]
    assert restore == [
        "link del dev br0",
        "link set dev enp0s17 nomaster",
        "link set dev enp0s17 mtu 1500",
        "address add 10.77.0.2/24 dev enp0s17",
        "link set dev enp0s18 nomaster",
        "link set dev enp0s18 mtu 1500",
    ]


def test_deleting_a_bridge_gives_its_addresses_to_its_first_port_and_back():
    bridge = Link(
        "br0",
        "bridge",
        "52:54:00:12:34:57",
        9000,
        68,
        65535,
        "UP",
        True,
        addresses=[Address("10.77.0.2/24", "inet", False)],
    )
    ports = [_nic("enp0s17", "52:54:00:12:34:57", 9000, master="br0"), _nic("enp0s18", "x", 9000, master="br0")]
    apply, restore = net.unbridge_lines(bridge, ports)
    assert apply == [
        "address del 10.77.0.2/24 dev br0",
        "link set dev enp0s17 nomaster",
        "link set dev enp0s18 nomaster",
        "link del dev br0",
        "address add 10.77.0.2/24 dev enp0s17",
    ]
    assert restore[0] == "address del 10.77.0.2/24 dev enp0s17" and restore[-1] == "link set dev br0 up"


def test_mtu_must_be_in_the_links_range():
    link = _nic("enp0s17", "m")
    assert net.mtu_lines(link, 9000) == (["link set dev enp0s17 mtu 9000"], ["link set dev enp0s17 mtu 1500"])
    with pytest.raises(ValueError, match="68 to 9000"):
        net.check_mtu(link, 9001)


def test_networkd_files_match_nics_by_mac_and_type_and_bridges_by_name():
    port = _nic("enp0s18", "52:54:00:12:34:58", 9000, master="br0")
    nic = _nic("enp0s17", "52:54:00:12:34:57", 9000, cidrs=["10.77.0.2/24"])
    bridge = Link(
        "br0",
        "bridge",
        "52:54:00:12:34:58",
        9000,
        68,
        65535,
        "UP",
        True,
        addresses=[Address("10.77.0.9/24", "inet", False)],
    )
    files = net.render_networkd([port, nic, bridge])
    assert sorted(files) == [
        "/etc/systemd/network/05-tarn-br0.netdev",
        "/etc/systemd/network/05-tarn-br0.network",
        "/etc/systemd/network/05-tarn-enp0s17.network",
        "/etc/systemd/network/05-tarn-enp0s18.network",
    ]
    assert (
        "MACAddress=52:54:00:12:34:57\nType=ether\n\n[Link]\nMTUBytes=9000\n\n[Network]\nAddress=10.77.0.2/24"
        in (files["/etc/systemd/network/05-tarn-enp0s17.network"])
    )
    assert "Bridge=br0" in files["/etc/systemd/network/05-tarn-enp0s18.network"]
    assert "Name=br0\nKind=bridge" in files["/etc/systemd/network/05-tarn-br0.netdev"]
    assert "Name=br0\nType=bridge" in files["/etc/systemd/network/05-tarn-br0.network"]


def test_iperf3_output_parses_and_the_client_argv_is_exact():
    result = iperf.parse_client(read("iperf3.json"), reverse=True)
    assert result.bps > 1e6 and result.reverse and result.seconds > 0
    assert result.streams == 1 and len(result.intervals) == 3 and result.intervals[0] == 1101865016.4493346
    assert iperf.client_argv("10.77.0.2", seconds=5, reverse=True) == [
        "iperf3",
        "-c",
        "10.77.0.2",
        "-p",
        "5301",
        "-t",
        "5",
        "-J",
        "--connect-timeout",
        "5000",
        "-R",
    ]
    assert iperf.client_argv("10.77.0.2", seconds=5, reverse=False, port=5201, streams=4)[-4:] == [
        "--connect-timeout",
        "5000",
        "-P",
        "4",
    ]
    with pytest.raises(ValueError):
        iperf.client_argv("10.77.0.2 -R", seconds=5, reverse=False)
    with pytest.raises(ValueError):
        iperf.client_argv("10.77.0.2", seconds=5, reverse=False, streams=17)


class Canned(Transport):
    """Answers read commands with output captured from the lab (a NIC with IPv4 and IPv6 addresses and routes an
    admin added: `ip route add 10.99.0.0/24 via …`, a link-scope route with a source, `ip -6 route add fd99::/64 …`)."""

    answers = {
        ("ip", "-4", "-j", "route", "show"): "ip_route_4.json",
        ("ip", "-6", "-j", "route", "show"): "ip_route_6.json",
        ("ip", "-j", "-d", "-s", "addr", "show"): "ip_addr_with_routes.json",
    }

    def _execute(self, argv, *, timeout, input, mutating, max_output):
        return CommandResult(argv, 0, read(self.answers[tuple(argv)]), "", 0.0, mutating)


def test_a_restore_puts_back_the_static_addresses_and_the_admins_routes_of_the_links_involved():
    t = Canned()
    links = {link.name: link for link in net.parse_links(t.run(["ip", "-j", "-d", "-s", "addr", "show"]).stdout)}
    routes = net.read_routes(t, {"enp0s17"})
    assert net.state_lines([links["enp0s17"]], routes) == [
        "address replace 10.77.0.2/24 dev enp0s17",
        "address replace fd77::2/64 dev enp0s17",
        "route replace 10.98.0.0/24 dev enp0s17 src 10.77.0.2 scope link proto boot",
        "route replace 10.99.0.0/24 via 10.77.0.1 dev enp0s17 proto boot",
        "route replace fd99::/64 via fd77::1 dev enp0s17 metric 1024 proto boot",
    ]  # the kernel's routes come back with the addresses; the management NIC's DHCP and RA routes are not involved
    assert net.state_lines([], net.read_routes(t, {"enp0s16"})) == []  # DHCP's, the kernel's, RA's: theirs to redo
    hostile = [{"dst": "10.0.0.0/8\nlink del dev enp0s16", "dev": "enp0s17"}, {"dst": "1.2.3.0/24", "dev": "x y"}]
    assert net.state_lines([], hostile + [{"dst": "default", "gateway": "fd77::1", "dev": "enp0s17"}]) == [
        "route replace ::/0 via fd77::1 dev enp0s17 proto boot"
    ]  # a value that is not what it should be never becomes a line of a root script


def test_the_iperf3_server_is_a_sandboxed_dynamic_user_bound_to_one_address_and_the_client_drops_root():
    argv = iperf.server_argv("7", "10.77.0.2", port=5201)
    assert argv[:3] == ["systemd-run", "--unit=tarn-iperf-7", "--collect"]
    assert {"--property=DynamicUser=yes", "--property=CapabilityBoundingSet=", "--property=PrivateDevices=yes"} <= set(
        argv
    )
    assert argv[argv.index("--") :] == ["--", "iperf3", "-s", "-1", "-p", "5201", "-B", "10.77.0.2"]
    with pytest.raises(ValueError):
        iperf.server_argv("7", "0.0.0.0 -D", port=5201)

    class Root(LocalTransport):
        privileged = True

    class User(LocalTransport):
        privileged = False

    client = iperf.client_argv("10.77.0.2", seconds=5, reverse=False)
    assert iperf.unprivileged(Root(), client) == [*iperf.NOBODY, *client]
    assert iperf.NOBODY[-1] == "--" and "--no-new-privs" in iperf.NOBODY and "--reuid=65534" in iperf.NOBODY
    assert iperf.unprivileged(User(), client) == client  # not root already: setpriv could not change user


@pytest.mark.parametrize("unit", ["tarn-restore-1;x", "sshd", "tarn-restore-", "tarn-Restore-1", "tarn-restore-1 "])
def test_only_tarn_units_are_armed_or_stopped(unit):
    with pytest.raises(ValueError):
        systemd._unit(unit)


def test_a_reload_waits_until_networkd_has_finished_with_the_link_and_it_stays_so(monkeypatch):
    """A first look can come before networkd has begun: the address still there, then taken off while networkd
    configures the link, then back. The reload returns only after two good looks in a row."""
    address = Address("10.77.0.2/24", "inet", dynamic=False)
    link = Link("enp0s17", "ether", "52:54:00:12:34:57", 1500, 68, 65535, "UP", True, addresses=[address])
    bare = Link("enp0s17", "ether", "52:54:00:12:34:57", 1500, 68, 65535, "UP", True)
    looks = iter(
        [
            [link],  # before networkd began
            [bare],
            [bare],
            [link],
            [link],
        ]
    )
    seen = []

    def read_links(t, details=True):
        seen.append(1)
        return next(looks)

    fake = FakeHost()
    monkeypatch.setattr(net, "read_links", read_links)
    monkeypatch.setattr(net.time, "sleep", lambda s: None)
    net.networkd_reload(fake.transport(), [link])
    assert len(seen) == 5, "returned only after the second good look in a row"
    assert ["networkctl", "reload"] in [c.argv for c in fake.calls]

    looks = iter([[bare]] * 1000)
    monkeypatch.setattr(net.time, "monotonic", iter(range(0, 100_000, 10)).__next__)
    with pytest.raises(HostError, match=r"enp0s17 \(MTU 1500, addresses missing: 10.77.0.2/24\)"):
        net.networkd_reload(fake.transport(), [link], timeout=30)
