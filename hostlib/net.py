"""Network links: read them (`ip -j -d -s addr`, ethtool), and the `ip -batch` scripts that change them and put
them back. Names are checked before any argv or script line exists."""

import ipaddress
import json
import re
import time
from dataclasses import dataclass, field

from hostlib.errors import HostError
from hostlib.runner import Transport

# Linux interface names: 1–15 bytes, no '/', no whitespace, not '.' or '..'; Tarn also refuses a leading '-' and
# anything outside letters, digits and . _ - (what udev and ifupdown produce, and what a bridge should be named).
IFNAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,14}$")
ETHTOOL_ARGV = {
    "driver": ["ethtool", "-i"],
    "settings": ["ethtool"],
    "rings": ["ethtool", "-g"],
    "features": ["ethtool", "-k"],
}
OFFLOADS = (
    "rx-checksumming",
    "tx-checksumming",
    "scatter-gather",
    "tcp-segmentation-offload",
    "generic-segmentation-offload",
    "generic-receive-offload",
    "large-receive-offload",
)


# Links whose MTU Tarn sets: a NIC, a bond, a VLAN or a bridge. Never the loopback, nor a veth or tun another
# program made and owns.
TUNABLE_KINDS = ("ether", "bond", "vlan", "bridge")
IPV6_MIN_MTU = 1280  # RFC 8200: below it the kernel takes IPv6 off the link (and its configured addresses)


def check_ifname(name: str) -> str:
    """The name exactly as the kernel spells it: no surrounding spaces trimmed away, nothing but the allowed bytes."""
    if not isinstance(name, str) or not IFNAME.fullmatch(name) or name in (".", ".."):
        raise ValueError("An interface name: 1–15 letters, digits, . _ - (not starting with - or .)")
    return name


def check_address(value: str) -> str:
    """An IPv4 or IPv6 address as typed, normalised; ValueError for anything else. An IPv6 zone (fe80::1%eth0) is
    refused: it names a link of whichever machine reads it, so it means something else on every host."""
    if not isinstance(value, str) or "%" in value:
        raise ValueError("An IP address without a zone (no %…): e.g. 192.0.2.10 or 2001:db8::10")
    try:
        return str(ipaddress.ip_address(value))
    except ValueError:
        raise ValueError(f"{value[:60]!r} is not an IP address") from None


@dataclass(frozen=True)
class Address:
    cidr: str  # "10.77.0.2/24"
    family: str  # "inet" / "inet6"
    dynamic: bool  # from DHCP or SLAAC: not Tarn's to move by hand
    scope: str = "global"


def static_address(cidr: str) -> Address:
    """An address given by hand (not DHCP's or SLAAC's), its family read from it."""
    family = "inet6" if ipaddress.ip_interface(cidr).version == 6 else "inet"
    return Address(cidr, family, dynamic=False)


@dataclass
class Link:
    name: str
    kind: str  # ether (a NIC), bridge, bond, vlan, veth, tun, loopback, …
    mac: str
    mtu: int
    min_mtu: int | None
    max_mtu: int | None
    state: str  # operstate: UP, DOWN, UNKNOWN, LOWERLAYERDOWN
    up: bool  # administratively up
    master: str = ""  # the bridge or bond it is a port of
    addresses: list[Address] = field(default_factory=list)
    counters: dict = field(default_factory=dict)  # rx/tx bytes, packets, errors, dropped
    driver: str = ""
    speed_mbps: int | None = None
    rings: dict = field(default_factory=dict)  # {"rx": 256, "rx_max": 256, "tx": …, "tx_max": …}
    offloads: dict = field(default_factory=dict)  # name → "on" / "off" / "off [fixed]"

    @property
    def is_nic(self) -> bool:
        return self.kind == "ether"

    @property
    def static_addresses(self) -> list[Address]:
        return [a for a in self.addresses if not a.dynamic and a.scope == "global"]


def parse_links(text: str) -> list[Link]:
    """`ip -j -d -s addr show` output."""
    links = []
    for raw in json.loads(text or "[]"):
        info = raw.get("linkinfo") or {}
        kind = info.get("info_kind") or ("loopback" if raw.get("link_type") == "loopback" else raw.get("link_type"))
        stats = raw.get("stats64") or raw.get("stats") or {}
        links.append(
            Link(
                name=raw["ifname"],
                kind=kind or "other",
                mac=raw.get("address", ""),
                mtu=int(raw.get("mtu", 0)),
                min_mtu=raw.get("min_mtu"),
                max_mtu=raw.get("max_mtu"),
                state=raw.get("operstate", "UNKNOWN"),
                up="UP" in raw.get("flags", []),
                master=raw.get("master", ""),
                addresses=[
                    Address(
                        cidr=f"{a['local']}/{a['prefixlen']}",
                        family=a.get("family", ""),
                        dynamic=bool(a.get("dynamic")) or a.get("valid_life_time", 4294967295) != 4294967295,
                        scope=a.get("scope", "global"),
                    )
                    for a in raw.get("addr_info", [])
                    if "local" in a
                ],
                counters={
                    f"{direction}_{name}": int(stats.get(direction, {}).get(name, 0))
                    for direction in ("rx", "tx")
                    for name in ("bytes", "packets", "errors", "dropped")
                },
            )
        )
    return links


def parse_driver(text: str) -> str:
    """`ethtool -i` output."""
    for line in text.splitlines():
        if line.startswith("driver:"):
            return line.split(":", 1)[1].strip()
    return ""


def parse_speed(text: str) -> int | None:
    """`ethtool <if>` output: 'Speed: 10000Mb/s' (virtual NICs say 'Unknown!')."""
    match = re.search(r"^\s*Speed:\s*(\d+)Mb/s", text, re.M)
    return int(match.group(1)) if match else None


def parse_rings(text: str) -> dict:
    """`ethtool -g` output: the pre-set maximums, then the current settings."""
    rings, section = {}, ""
    for line in text.splitlines():
        if line.startswith("Pre-set maximums"):
            section = "_max"
        elif line.startswith("Current hardware settings"):
            section = ""
        else:
            match = re.match(r"^(RX|TX):\s+(\d+)$", line.strip())
            if match:
                rings[match.group(1).lower() + section] = int(match.group(2))
    return rings


def parse_features(text: str) -> dict:
    """`ethtool -k` output, the offloads an admin cares about."""
    features = {}
    for line in text.splitlines():
        name, sep, value = line.strip().partition(": ")
        if sep and name in OFFLOADS:
            features[name] = value.strip()
    return features


def read_links(t: Transport, *, details: bool = True) -> list[Link]:
    """Every link with its addresses and counters; for NICs also driver, speed, rings and offloads (ethtool)."""
    links = parse_links(t.run(["ip", "-j", "-d", "-s", "addr", "show"], timeout=30).stdout)
    if details:
        for link in links:
            if not link.is_nic:
                continue
            # ethtool takes no `--`; the name comes from the kernel's own list and cannot start with a dash.
            name = check_ifname(link.name)
            out = {key: t.run([*argv, name], check=False, timeout=15).stdout for key, argv in ETHTOOL_ARGV.items()}
            link.driver = parse_driver(out["driver"])
            link.speed_mbps = parse_speed(out["settings"])
            link.rings = parse_rings(out["rings"])
            link.offloads = parse_features(out["features"])
    return links


# --- changes as `ip -batch` scripts --------------------------------------------------------------------------------
# A change is a list of `ip` command lines with their exact inverse; both are written to files on the host and run
# with `ip -force -batch` (no shell; -force goes on after a failing line, so a restore does all it can).


def check_mtu(link: Link, mtu: int, ports: list[Link] = ()) -> int:
    """An MTU the link (a NIC, bond, VLAN or bridge) takes: within its driver's range, and not below 1280 where it or a
    port carries IPv6."""
    if link.kind not in TUNABLE_KINDS:
        raise ValueError(f"{link.name} is a {link.kind} link: Tarn sets the MTU of NICs, bonds, VLANs and bridges")
    low, high = link.min_mtu or 68, link.max_mtu or 65535
    if not isinstance(mtu, int) or isinstance(mtu, bool) or not low <= mtu <= high:
        raise ValueError(f"{link.name} takes an MTU from {low} to {high}")
    if mtu < IPV6_MIN_MTU and any(a.family == "inet6" for x in (link, *ports) for a in x.addresses):
        raise ValueError(f"{link.name} carries IPv6, which needs an MTU of at least {IPV6_MIN_MTU}")
    return mtu


def mtu_lines(link: Link, mtu: int) -> tuple[list[str], list[str]]:
    """(apply, restore) for one link's MTU."""
    return [f"link set dev {link.name} mtu {int(mtu)}"], [f"link set dev {link.name} mtu {int(link.mtu)}"]


def bridge_lines(name: str, ports: list[Link], mtu: int | None = None) -> tuple[list[str], list[str]]:
    """(apply, restore) for a new bridge over ports: the ports' static addresses move to the bridge (the bridge
    takes the first port's MAC, so DHCP leases and ARP caches keep working), and back on restore."""
    check_ifname(name)
    names = [p.name for p in ports]
    if len(set(names)) != len(names):
        raise ValueError(f"A port is named twice: {', '.join(sorted({n for n in names if names.count(n) > 1}))}")
    mtu = int(mtu or min(p.mtu for p in ports))
    apply = [f"link add name {name} address {ports[0].mac} mtu {mtu} type bridge"]
    restore = []
    for port in ports:
        for address in port.static_addresses:
            apply.append(f"address del {address.cidr} dev {port.name}")
        apply.append(f"link set dev {port.name} mtu {mtu} master {name}")
        apply.append(f"link set dev {port.name} up")
        restore.append(f"link set dev {port.name} nomaster")
        restore.append(f"link set dev {port.name} mtu {port.mtu}")
        for address in port.static_addresses:
            restore.append(f"address add {address.cidr} dev {port.name}")
    for port in ports:
        for address in port.static_addresses:
            apply.append(f"address add {address.cidr} dev {name}")
    apply.append(f"link set dev {name} up")
    restore.insert(0, f"link del dev {name}")
    return apply, restore


def unbridge_moves(bridge: Link, ports: list[Link]) -> tuple[str, list[str]]:
    """Where a deleted bridge's static addresses go: its first port (none where it has no port)."""
    home = ports[0].name if ports else ""
    return home, [a.cidr for a in bridge.static_addresses] if home else []


def unbridge_lines(bridge: Link, ports: list[Link]) -> tuple[list[str], list[str]]:
    """(apply, restore) for deleting a bridge: its static addresses go back to its first port."""
    home, moved = unbridge_moves(bridge, ports)
    apply = [f"address del {cidr} dev {bridge.name}" for cidr in moved]
    apply += [f"link set dev {port.name} nomaster" for port in ports]
    apply.append(f"link del dev {bridge.name}")
    apply += [f"address add {cidr} dev {home}" for cidr in moved]
    restore = [f"address del {cidr} dev {home}" for cidr in moved]
    restore.append(f"link add name {bridge.name} address {bridge.mac} mtu {bridge.mtu} type bridge")
    restore += [f"link set dev {port.name} master {bridge.name}" for port in ports]
    restore += [f"address add {cidr} dev {bridge.name}" for cidr in moved]
    restore.append(f"link set dev {bridge.name} up")
    return apply, restore


# Routes a restore puts back: the ones an admin (`ip route add`: boot) or networkd (static) made. The kernel's own
# come back with their addresses; DHCP's, router advertisements' and routing daemons' are theirs to make again.
RESTORED_PROTOCOLS = ("boot", "static")


def read_routes(t: Transport, names: set[str]) -> list[dict]:
    """The main table's routes (IPv4 and IPv6) through the named links."""
    routes = []
    for family in ("-4", "-6"):
        out = t.run(["ip", family, "-j", "route", "show"], check=False).stdout
        for route in json.loads(out or "[]"):
            unicast = route.get("type", "unicast") == "unicast"
            if unicast and route.get("dev") in names and route.get("protocol", "boot") in RESTORED_PROTOCOLS:
                routes.append(route)
    return routes


def state_lines(links: list[Link], routes: list[dict]) -> list[str]:
    """`ip -batch` lines that put links' static addresses and routes back as they were read (replace: a line whose
    address or route is there already changes nothing). Every value comes from the host and is checked before it
    becomes a line; a route that does not read as one is left out."""
    lines = []
    for link in links:
        for address in link.static_addresses:
            lines.append(f"address replace {ipaddress.ip_interface(address.cidr)} dev {check_ifname(link.name)}")
    for route in routes:
        try:
            lines.append(_route_line(route))
        except (ValueError, TypeError, KeyError):
            continue
    return lines


def _route_line(route: dict) -> str:
    dst = route["dst"]
    six = ":" in dst or ":" in str(route.get("gateway", ""))
    dst = ("::/0" if six else "0.0.0.0/0") if dst == "default" else str(ipaddress.ip_network(dst, strict=False))
    words = ["route", "replace", dst]
    if route.get("gateway"):
        words += ["via", check_address(route["gateway"])]
    words += ["dev", check_ifname(route["dev"])]
    if route.get("prefsrc"):
        words += ["src", check_address(route["prefsrc"])]
    if route.get("scope") == "link":
        words += ["scope", "link"]
    if route.get("metric") is not None:
        words += ["metric", str(int(route["metric"]))]
    words += ["proto", "static" if route.get("protocol") == "static" else "boot"]
    return " ".join(words)


def run_batch(t: Transport, path: str, lines: list[str], *, timeout: float = 60) -> None:
    """Write an `ip -batch` script and run it (stop at the first failing line)."""
    t.write_file(path, "".join(line + "\n" for line in lines), mode=0o600)
    t.run(["ip", "-batch", path], mutating=True, timeout=timeout)


def restore_argv(path: str) -> list[str]:
    """An `ip -batch` restore script run to its end: every line is tried, whatever failed before it."""
    return ["ip", "-force", "-batch", path]


def restore_batch(t: Transport, path: str, *, timeout: float = 60) -> None:
    """Put the original link settings back now from a restore script written before the change."""
    t.run(restore_argv(path), mutating=True, check=False, timeout=timeout)


def ping_df(t: Transport, address: str, mtu: int, *, count: int = 3, timeout: float = 30) -> tuple[bool, str]:
    """Does the path to address carry frames of mtu bytes unfragmented? `ping -M do -s <mtu - 28>` (IPv4)."""
    ip = ipaddress.ip_address(check_address(address))
    payload = int(mtu) - (48 if ip.version == 6 else 28)
    argv = ["ping", "-n", "-M", "do", "-s", str(payload), "-c", str(count), "-i", "0.2", "-W", "2", "--", str(ip)]
    result = t.run(argv, check=False, timeout=timeout)
    summary = next((line for line in result.stdout.splitlines() if "packets transmitted" in line), "")
    return result.returncode == 0, summary or (result.stderr.strip().splitlines() or ["no answer"])[-1]


def management_links(t: Transport, links: list[Link]) -> set[str]:
    """Links Tarn or the admin reach the host through: the default route's, and the one holding the address this
    SSH session came in on (SSH_CONNECTION). Taking them into a bridge needs an explicit yes."""
    names = set()
    for route in json.loads(t.run(["ip", "-j", "route", "show", "default"], check=False).stdout or "[]"):
        if route.get("dev"):
            names.add(route["dev"])
    session = t.run(["printenv", "SSH_CONNECTION"], check=False).stdout.split()
    if len(session) == 4:
        names |= {link.name for link in links if any(a.cidr.split("/")[0] == session[2] for a in link.addresses)}
    # A bridge port's own address moved to the bridge: the port carries it too.
    names |= {link.name for link in links if link.master in names}
    return names


# --- persistence: systemd-networkd files for the links Tarn manages -------------------------------------------------
NETWORKD_DIR = "/etc/systemd/network"
PREFIX = "05-tarn-"  # sorts before the system's own files, so Tarn's take a link over


def _network_section(link: Link) -> list[str]:
    lines = ["[Network]"]
    if link.master:
        return [*lines, f"Bridge={link.master}", "LinkLocalAddressing=no", "IPv6AcceptRA=no"]
    lines += [f"Address={a.cidr}" for a in link.static_addresses]
    dhcp4 = any(a.dynamic and a.family == "inet" for a in link.addresses)
    ra = any(a.dynamic and a.family == "inet6" and a.scope == "global" for a in link.addresses)
    link_local = any(a.family == "inet6" and a.scope == "link" for a in link.addresses)
    if dhcp4:
        lines.append("DHCP=ipv4")
    lines.append(f"LinkLocalAddressing={'ipv6' if link_local else 'no'}")
    lines.append(f"IPv6AcceptRA={'yes' if ra else 'no'}")
    lines.append("ConfigureWithoutCarrier=yes")
    return lines


def render_networkd(links: list[Link]) -> dict[str, str]:
    """path → text for each link Tarn manages: a NIC matched by MAC (and type, as a bridge shares its MAC), a
    bridge by name with its .netdev. Pure: rendered from the links' observed state after a kept change."""
    header = "# Written by Tarn from its database; edits here are replaced on the next change.\n"
    files = {}
    for link in sorted(links, key=lambda x: x.name):
        check_ifname(link.name)
        base = f"{NETWORKD_DIR}/{PREFIX}{link.name}"
        if link.kind == "bridge":
            files[f"{base}.netdev"] = header + "\n".join(
                ["[NetDev]", f"Name={link.name}", "Kind=bridge", f"MACAddress={link.mac}", f"MTUBytes={link.mtu}", ""]
            )
            match = ["[Match]", f"Name={link.name}", "Type=bridge"]
        elif link.kind == "ether":
            match = ["[Match]", f"MACAddress={link.mac}", "Type=ether"]
        else:
            raise ValueError(f"Tarn keeps NICs and bridges only, not a {link.kind} ({link.name})")
        lines = [*match, "", "[Link]", f"MTUBytes={link.mtu}", "", *_network_section(link), ""]
        files[f"{base}.network"] = header + "\n".join(lines)
    return files


def tarn_networkd_files(t: Transport) -> list[str]:
    """The networkd files Tarn wrote on this host."""
    argv = ["find", NETWORKD_DIR, "-maxdepth", "1", "-name", f"{PREFIX}*", "-type", "f"]
    return sorted(t.run(argv, check=False).stdout.split())


def networkd_reload(t: Transport, links: list[Link] = (), *, timeout: float = 30.0) -> None:
    """networkd re-reads its files (Tarn's own sort first) and applies them to the links. It does so after
    `networkctl reload` has returned, and may take a link's addresses off while it does: with links given, wait
    until each carries its MTU and static addresses, seen so twice in a row (a first look can come before networkd
    has even begun: networkctl's SETUP column is no help, a bridge's ports stay "configuring"), else a HostError
    naming what is missing at the deadline."""
    t.run(["networkctl", "reload"], mutating=True, timeout=60)
    deadline, settled = time.monotonic() + timeout, 0
    while links and settled < 2:
        missing = _not_configured(t, links)
        settled = 0 if missing else settled + 1
        if missing and time.monotonic() > deadline:
            raise HostError(f"networkd did not configure {'; '.join(missing)} within {timeout:.0f} s")
        if settled < 2:
            time.sleep(0.5)


def _not_configured(t: Transport, links: list[Link]) -> list[str]:
    if not links:
        return []
    live = {x.name: x for x in read_links(t, details=False)}
    missing = []
    for link in links:
        now = live.get(link.name)
        if now is None:
            missing.append(f"{link.name} (gone)")
            continue
        absent = {a.cidr for a in link.static_addresses} - {a.cidr for a in now.addresses}
        if now.mtu != link.mtu or absent:
            missing.append(f"{link.name} (MTU {now.mtu}, addresses missing: {', '.join(sorted(absent)) or 'none'})")
    return missing
