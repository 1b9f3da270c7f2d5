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
    parent: str = ""  # a VLAN's: the link it is on
    perm_mac: str = ""  # the NIC's own MAC where it differs from mac (a bond's ports all carry the bond's)
    info: dict = field(default_factory=dict)  # a bond's mode, miimon, lacp_rate, xmit_hash_policy; a VLAN's id; a
    # bond port's state (ACTIVE/BACKUP) and mii_status
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
    def own_mac(self) -> str:
        return self.perm_mac or self.mac

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
                parent=raw.get("link", "") if kind == "vlan" else "",
                perm_mac=raw.get("permaddr", ""),
                info=_info(kind, info),
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


def _info(kind: str, info: dict) -> dict:
    """What Tarn shows and keeps of a link's details: a bond's options, a VLAN's id, a bond port's state."""
    data, found = info.get("info_data") or {}, {}
    if kind == "bond":
        found = {
            "mode": data.get("mode", ""),
            "miimon": int(data.get("miimon") or 0),
            "lacp_rate": data.get("ad_lacp_rate", "") if data.get("mode") == "802.3ad" else "",
            "xmit_hash_policy": data.get("xmit_hash_policy", "") if data.get("mode") == "802.3ad" else "",
            "active": data.get("active_slave", ""),
        }
    elif kind == "vlan":
        found = {"id": int(data.get("id") or 0), "protocol": data.get("protocol", "")}
    if info.get("info_slave_kind") == "bond":
        port = info.get("info_slave_data") or {}
        found |= {"bond_state": port.get("state", ""), "mii_status": port.get("mii_status", "")}
    return found


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


def stack_mtu_lines(link: Link, lower: list[Link], upper: list[Link], mtu: int) -> tuple[list[str], list[str]]:
    """(apply, restore) for an MTU down the stack: the link, what it sits on (a bridge's ports) and what sits on it
    (its VLANs) all take it. A link's MTU cannot exceed the one below it: raising goes from the bottom up, lowering
    from the top down, and the restore (back to each one's own MTU) the other way round."""
    order = [*lower, link, *upper]
    apply = [line for x in (order if mtu >= link.mtu else order[::-1]) for line in mtu_lines(x, mtu)[0]]
    restore = [line for x in (order[::-1] if mtu >= link.mtu else order) for line in mtu_lines(x, mtu)[1]]
    return apply, restore


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


# --- bonds and VLANs ------------------------------------------------------------------------------------------------
BOND_MODES = ("802.3ad", "active-backup", "balance-alb")
LACP_RATES = ("slow", "fast")  # 802.3ad only: LACPDUs every 30 s or every second
HASH_POLICIES = ("layer2", "layer2+3", "layer3+4", "encap2+3", "encap3+4")  # 802.3ad only: how flows spread
MIIMON_MIN, MIIMON_MAX = 10, 1000  # ms between carrier checks (100 is what every distribution's example uses)
VLAN_ID_MIN, VLAN_ID_MAX = 1, 4094  # 0 is "no VLAN" (priority tags), 4095 reserved (IEEE 802.1Q)
VLAN_PARENT_KINDS = ("ether", "bond", "bridge")


@dataclass(frozen=True)
class BondOptions:
    mode: str = "active-backup"
    miimon: int = 100
    lacp_rate: str = ""  # "" : the kernel's default (slow); 802.3ad only
    xmit_hash_policy: str = ""  # "" : the kernel's default (layer2); 802.3ad only

    def checked(self) -> "BondOptions":
        """ValueError naming the option that is wrong (the words are the ones ip and networkd take)."""
        if self.mode not in BOND_MODES:
            raise ValueError(f"mode: one of {', '.join(BOND_MODES)}")
        if (
            isinstance(self.miimon, bool)
            or not isinstance(self.miimon, int)
            or not MIIMON_MIN <= self.miimon <= MIIMON_MAX
        ):
            raise ValueError(f"miimon: from {MIIMON_MIN} to {MIIMON_MAX} ms")
        for name, value, allowed in (
            ("lacp_rate", self.lacp_rate, LACP_RATES),
            ("xmit_hash_policy", self.xmit_hash_policy, HASH_POLICIES),
        ):
            if value and value not in allowed:
                raise ValueError(f"{name}: one of {', '.join(allowed)}")
            if value and self.mode != "802.3ad":
                raise ValueError(f"{name}: for mode 802.3ad (LACP) only")
        return self

    def ip_words(self) -> list[str]:
        words = ["mode", self.mode, "miimon", str(int(self.miimon))]
        if self.lacp_rate:
            words += ["lacp_rate", self.lacp_rate]
        if self.xmit_hash_policy:
            words += ["xmit_hash_policy", self.xmit_hash_policy]
        return words

    @classmethod
    def of(cls, bond: Link) -> "BondOptions":
        """A bond's options as read (what a restore makes it again with)."""
        info = bond.info
        return cls(
            mode=info.get("mode", "active-backup"),
            miimon=int(info.get("miimon") or 100),
            lacp_rate=info.get("lacp_rate", ""),
            xmit_hash_policy=info.get("xmit_hash_policy", ""),
        ).checked()


def check_vlan_id(vid: int) -> int:
    if isinstance(vid, bool) or not isinstance(vid, int) or not VLAN_ID_MIN <= vid <= VLAN_ID_MAX:
        raise ValueError(f"A VLAN id from {VLAN_ID_MIN} to {VLAN_ID_MAX} (0 and 4095 are reserved)")
    return vid


def check_cidr(value: str) -> str:
    """An address with its prefix (192.0.2.10/24, 2001:db8::10/64), normalised; ValueError otherwise."""
    if not isinstance(value, str) or "/" not in value or "%" in value:
        raise ValueError(f"{str(value)[:60]!r}: an address with its prefix length, e.g. 192.0.2.10/24")
    try:
        found = ipaddress.ip_interface(value)
    except ValueError:
        raise ValueError(f"{value[:60]!r} is not an address with a prefix length") from None
    if found.ip.is_loopback or found.ip.is_multicast or found.ip.is_unspecified:
        raise ValueError(f"{value[:60]!r} is not an address a link can carry")
    return str(found)


def _add_bond(name: str, mac: str, mtu: int, options: BondOptions) -> str:
    return f"link add name {check_ifname(name)} address {mac} mtu {int(mtu)} type bond {' '.join(options.ip_words())}"


def _enslave(port: Link, bond: str) -> list[str]:
    """A NIC joins a bond down (the kernel refuses one that is up) and without addresses (the bond carries them)."""
    return [
        f"address flush dev {port.name} scope global",
        f"link set dev {port.name} down",
        f"link set dev {port.name} master {bond}",
        f"link set dev {port.name} up",
    ]


def _set_free(port: Link) -> list[str]:
    """A former bond port as it was: no master, its own MTU, up, its static addresses."""
    lines = [f"link set dev {port.name} nomaster", f"link set dev {port.name} mtu {port.mtu}"]
    lines.append(f"link set dev {port.name} up")
    return lines + [f"address add {a.cidr} dev {port.name}" for a in port.static_addresses]


def bond_lines(name: str, ports: list[Link], options: BondOptions, mtu: int | None = None):
    """(apply, restore) for a new bond of NICs: it takes the first port's MAC (DHCP leases and ARP caches keep
    working) and the ports' static addresses; the restore deletes it (the kernel gives each port its MAC back) and
    gives each port its MTU, state and addresses again."""
    check_ifname(name)
    options.checked()
    names = [p.name for p in ports]
    if len(set(names)) != len(names):
        raise ValueError(f"A port is named twice: {', '.join(sorted({n for n in names if names.count(n) > 1}))}")
    if len(ports) < 2:
        raise ValueError("A bond needs two NICs at least")
    mtu = int(mtu or min(p.mtu for p in ports))
    apply = [_add_bond(name, ports[0].own_mac, mtu, options)]
    for port in ports:
        apply += _enslave(port, name)
    apply += [f"address add {a.cidr} dev {name}" for p in ports for a in p.static_addresses]
    apply.append(f"link set dev {name} up")
    restore = [f"link del dev {name}"]
    for port in ports:
        restore += _set_free(port)
    return apply, restore


def unbond_lines(bond: Link, ports: list[Link]) -> tuple[list[str], list[str]]:
    """(apply, restore) for deleting a bond: its static addresses go to its first port (by name), as a bridge's do;
    the kernel gives each port its own MAC back."""
    ports = sorted(ports, key=lambda p: p.name)
    home, moved = unbridge_moves(bond, ports)
    apply = [f"link del dev {bond.name}"]  # its addresses go with it (networkd may have taken them off already)
    apply += [f"link set dev {port.name} up" for port in ports]
    apply += [f"address add {cidr} dev {home}" for cidr in moved]
    restore = [f"address del {cidr} dev {home}" for cidr in moved]
    restore.append(_add_bond(bond.name, bond.mac, bond.mtu, BondOptions.of(bond)))
    for port in ports:
        restore += _enslave(port, bond.name)
    restore += [f"address add {cidr} dev {bond.name}" for cidr in moved]
    restore.append(f"link set dev {bond.name} up")
    return apply, restore


def vlan_name(parent: str, vid: int) -> str:
    """The usual name, parent.id, where it fits in 15 bytes; else vlan<id>."""
    name = f"{parent}.{int(vid)}"
    return name if len(name) <= 15 else f"vlan{int(vid)}"


def vlan_lines(parent: Link, vid: int, name: str, addresses: list[str], mtu: int | None = None):
    """(apply, restore) for a new VLAN on a NIC, bond or bridge, with the addresses given (the parent keeps its
    own: its untagged traffic goes on). Its MTU is the parent's unless given lower."""
    check_ifname(name)
    check_vlan_id(vid)
    if parent.kind not in VLAN_PARENT_KINDS:
        raise ValueError(f"A VLAN goes on a NIC, a bond or a bridge, not on a {parent.kind} ({parent.name})")
    mtu = int(mtu or parent.mtu)
    if mtu > parent.mtu:
        raise ValueError(f"The VLAN's MTU ({mtu}) cannot exceed {parent.name}'s ({parent.mtu})")
    apply = [f"link add link {parent.name} name {name} mtu {mtu} type vlan id {int(vid)}"]
    apply += [f"address add {check_cidr(cidr)} dev {name}" for cidr in addresses]
    apply.append(f"link set dev {name} up")
    return apply, [f"link del dev {name}"]


def unvlan_lines(vlan: Link) -> tuple[list[str], list[str]]:
    """(apply, restore) for deleting a VLAN: made again on its parent with its id, MTU and static addresses."""
    vid = check_vlan_id(int(vlan.info.get("id") or 0))
    restore = [f"link add link {check_ifname(vlan.parent)} name {vlan.name} mtu {vlan.mtu} type vlan id {vid}"]
    restore += [f"address add {a.cidr} dev {vlan.name}" for a in vlan.static_addresses]
    restore.append(f"link set dev {vlan.name} up")
    return [f"link del dev {vlan.name}"], restore


# While a bond or VLAN change waits for Keep, networkd must leave its links alone: a bond's ports all carry the
# bond's MAC (and a VLAN its parent's), so a file matching a NIC by MAC would configure the bond, the other port and
# the VLAN as that NIC, and a port taken down to be enslaved is configured again when it comes up. A runtime file
# (gone at reboot) sorting before every other marks them unmanaged until Tarn keeps or settles the change.
HOLD_DIR = "/run/systemd/network"


def hold_path(change: int) -> str:
    return f"{HOLD_DIR}/04-tarn-hold-{int(change)}.network"


def networkd_active(t: Transport) -> bool:
    argv = ["systemctl", "is-active", "--quiet", "systemd-networkd.service"]
    return t.run(argv, check=False, timeout=30).returncode == 0


def hold(t: Transport, change: int, names: list[str]) -> bool:
    """networkd leaves these links alone until release (True), or networkd does not run here (False)."""
    if not networkd_active(t):
        return False
    words = " ".join(check_ifname(n) for n in sorted(set(names)))
    text = f"# Tarn: change {int(change)} waits for Keep; networkd leaves these links alone until then.\n"
    t.write_file(hold_path(change), text + f"[Match]\nName={words}\n\n[Link]\nUnmanaged=yes\n", mode=0o644)
    t.run(["networkctl", "reload"], mutating=True, timeout=60)
    return True


def release(t: Transport, change: int, links: list[Link] = ()) -> None:
    """networkd manages the held links again (from Tarn's files once kept, or its own after a restore)."""
    if t.remove_file(hold_path(change)):
        networkd_reload(t, links)


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


def _network_section(link: Link, master_kind: str, vlans: list[str]) -> list[str]:
    lines = ["[Network]"]
    if link.master:
        joins = "Bond" if master_kind == "bond" else "Bridge"
        return [*lines, f"{joins}={link.master}", "LinkLocalAddressing=no", "IPv6AcceptRA=no"]
    lines += [f"Address={a.cidr}" for a in link.static_addresses]
    dhcp4 = any(a.dynamic and a.family == "inet" for a in link.addresses)
    ra = any(a.dynamic and a.family == "inet6" and a.scope == "global" for a in link.addresses)
    link_local = any(a.family == "inet6" and a.scope == "link" for a in link.addresses)
    if dhcp4:
        lines.append("DHCP=ipv4")
    lines.append(f"LinkLocalAddressing={'ipv6' if link_local else 'no'}")
    lines.append(f"IPv6AcceptRA={'yes' if ra else 'no'}")
    lines.append("ConfigureWithoutCarrier=yes")
    return lines + [f"VLAN={name}" for name in vlans]


def _netdev(link: Link) -> list[str]:
    """A bridge's, bond's or VLAN's .netdev: what networkd makes at boot before it configures it."""
    lines = ["[NetDev]", f"Name={link.name}", f"Kind={link.kind}"]
    if link.kind != "vlan":  # a VLAN carries its parent's MAC
        lines.append(f"MACAddress={link.mac}")
    lines += [f"MTUBytes={link.mtu}", ""]
    if link.kind == "bond":
        options = BondOptions.of(link)
        lines += ["[Bond]", f"Mode={options.mode}", f"MIIMonitorSec={options.miimon}ms"]
        if options.lacp_rate:
            lines.append(f"LACPTransmitRate={options.lacp_rate}")
        if options.xmit_hash_policy:
            lines.append(f"TransmitHashPolicy={options.xmit_hash_policy}")
        lines.append("")
    elif link.kind == "vlan":
        lines += ["[VLAN]", f"Id={check_vlan_id(int(link.info.get('id') or 0))}", ""]
    return lines


def render_networkd(links: list[Link]) -> dict[str, str]:
    """path → text for each link Tarn manages: a NIC matched by its own (permanent) MAC and type (a bridge, a bond
    and a VLAN carry a NIC's MAC, and a bond's ports all carry the bond's), a bridge, bond or VLAN by name with its
    .netdev; a VLAN's parent names it. Pure: rendered from the links' observed state after a kept change. A VLAN
    needs its parent among the links, and a port its bond (else networkd would never make them)."""
    header = "# Written by Tarn from its database; edits here are replaced on the next change.\n"
    kinds = {x.name: x.kind for x in links}
    for link in links:
        if link.kind == "vlan" and link.parent not in kinds:
            raise ValueError(f"{link.name} is kept only with its parent {link.parent}")
        if "bond_state" in link.info and link.master not in kinds:
            raise ValueError(f"{link.name} is kept only with its bond {link.master}")
    files = {}
    for link in sorted(links, key=lambda x: x.name):
        check_ifname(link.name)
        base = f"{NETWORKD_DIR}/{PREFIX}{link.name}"
        if link.kind in ("bridge", "bond", "vlan"):
            files[f"{base}.netdev"] = header + "\n".join(_netdev(link))
            match = ["[Match]", f"Name={link.name}", f"Type={link.kind}"]
        elif link.kind == "ether":
            match = ["[Match]", f"PermanentMACAddress={link.own_mac}", "Type=ether"]
        else:
            raise ValueError(f"Tarn keeps NICs, bridges, bonds and VLANs only, not a {link.kind} ({link.name})")
        vlans = sorted(x.name for x in links if x.kind == "vlan" and x.parent == link.name)
        master_kind = kinds.get(link.master) or ("bond" if "bond_state" in link.info else "bridge")
        mtu = [] if master_kind == "bond" else ["[Link]", f"MTUBytes={link.mtu}", ""]  # a bond sets its ports'
        section = _network_section(link, master_kind, vlans)
        files[f"{base}.network"] = header + "\n".join([*match, "", *mtu, *section, ""])
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
