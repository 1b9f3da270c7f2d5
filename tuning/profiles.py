"""Base tuning profiles as data: each entry is a key, a value, why, where the value comes from, and the condition
under which it applies (values and sources: shared/reference/tuning.md, measurements.md)."""

from dataclasses import dataclass, field

from hostlib.digits import is_digits
from tuning.choices import SettingKind

MiB = 1024 * 1024

# Conditions: "raise" never lowers what the kernel has (every number compared, e.g. the three of tcp_rmem);
# "always" sets the value as given; "smb" / "nfs" only where the host runs that server. A service value "auto"
# is worked out for the host when planning (nfsd threads from its cores).
RAISE, ALWAYS = "raise", "always"
SMB, NFS = "smb", "nfs"  # only where the host has Samba / the NFS server


@dataclass(frozen=True)
class Entry:
    kind: str
    key: str
    value: str
    why: str
    source: str
    condition: str = ALWAYS


@dataclass(frozen=True)
class Profile:
    key: str
    title: str
    summary: str
    entries: tuple[Entry, ...] = field(default_factory=tuple)


ESNET = "ESnet fasterdata, Linux host tuning (10G ≤ 100 ms RTT)"
TUNED = "RHEL tuned network-throughput (v2.28)"

LAN_10G = (
    Entry(
        SettingKind.SYSCTL,
        "net.core.rmem_max",
        str(128 * MiB),
        "Caps the receive buffer an application may ask for (SO_RCVBUF); autotuning ignores it.",
        ESNET,
        RAISE,
    ),
    Entry(
        SettingKind.SYSCTL,
        "net.core.wmem_max",
        str(128 * MiB),
        "Caps the send buffer an application may ask for (SO_SNDBUF).",
        ESNET,
        RAISE,
    ),
    Entry(
        SettingKind.SYSCTL,
        "net.ipv4.tcp_rmem",
        f"4096 87380 {64 * MiB}",
        "Receive autotuning may grow to 64 MiB: enough for 10G at 50 ms. Helps only where bandwidth × RTT is "
        "above the default cap (measured: +57% at 5 ms, +225% at 40 ms, nothing on a LAN).",
        ESNET,
        RAISE,
    ),
    Entry(
        SettingKind.SYSCTL,
        "net.ipv4.tcp_wmem",
        f"4096 65536 {64 * MiB}",
        "Send autotuning may grow to 64 MiB; the 4 MiB default capped one stream at ~4 Gbit/s at 5 ms.",
        ESNET,
        RAISE,
    ),
    Entry(
        SettingKind.SYSCTL,
        "net.ipv4.tcp_mtu_probing",
        "1",
        "Recovers from path-MTU black holes where jumbo and 1500-byte paths mix.",
        ESNET,
    ),
    Entry(
        SettingKind.SYSCTL,
        "net.ipv4.tcp_slow_start_after_idle",
        "0",
        "SMB and NFS sessions are bursty: keep the congestion window across idle gaps.",
        TUNED,
    ),
    Entry(
        SettingKind.SYSCTL,
        "net.core.netdev_max_backlog",
        "30000",
        "Longer per-CPU input queue for bridges and virtual links; harmless at NAS scale.",
        ESNET,
        RAISE,
    ),
    Entry(
        SettingKind.SYSCTL,
        "vm.swappiness",
        "10",
        "Keep Tarn, Samba and the database resident rather than swapping them for cache.",
        TUNED,
    ),
    Entry(
        SettingKind.SERVICE,
        "smb_min_protocol",
        "SMB2",
        "SMB1 caps one read or write at 64 KiB and is unsafe; SMB 2.1+ moves up to 8 MiB per request.",
        "smb.conf(5); TrueNAS",
        SMB,
    ),
    Entry(
        SettingKind.SERVICE,
        "smb_multichannel",
        "yes",
        "Several TCP flows per session across NICs and receive queues: the biggest single-client win on 10G+.",
        "smb.conf(5) (the default since Samba 4.15)",
        SMB,
    ),
    Entry(
        SettingKind.SERVICE,
        "nfs_threads",
        "auto",
        "One nfsd thread per core, at most 32 (nfs-utils starts 8 whatever the machine).",
        "TrueNAS plugins/nfs.py",
        NFS,
    ),
)

WAN = LAN_10G + (
    Entry(
        SettingKind.SYSCTL,
        "net.core.default_qdisc",
        "fq",
        "Per-flow pacing, which BBR is designed around (applies to queues set up from now on).",
        ESNET,
    ),
    Entry(
        SettingKind.SYSCTL,
        "net.ipv4.tcp_congestion_control",
        "bbr",
        "BBR: 1.6× cubic on a lossy 40 ms path, but half of cubic on a reordering LAN path: only for WAN and "
        "replication links.",
        "measured here (tuning.md §0.2); ESnet",
    ),
)

G100 = tuple(
    e
    for e in LAN_10G
    if e.key not in ("net.core.rmem_max", "net.core.wmem_max", "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem")
) + (
    Entry(
        SettingKind.SYSCTL,
        "net.core.rmem_max",
        "2147483647",
        "100G: buffers for 100 Gbit/s × tens of ms.",
        "ESnet 100G tuning",
        RAISE,
    ),
    Entry(
        SettingKind.SYSCTL, "net.core.wmem_max", "2147483647", "100G: as above, send side.", "ESnet 100G tuning", RAISE
    ),
    Entry(
        SettingKind.SYSCTL,
        "net.ipv4.tcp_rmem",
        "4096 131072 1073741824",
        "100G: autotuning up to 1 GiB.",
        "ESnet 100G tuning",
        RAISE,
    ),
    Entry(
        SettingKind.SYSCTL,
        "net.ipv4.tcp_wmem",
        "4096 16384 1073741824",
        "100G: autotuning up to 1 GiB.",
        "ESnet 100G tuning",
        RAISE,
    ),
)

PROFILES = {
    p.key: p
    for p in (
        Profile(
            "lan10g",
            "10G LAN",
            "TCP buffers, MTU probing, no slow start after idle, backlog, swappiness. "
            "Cubic stays (BBR loses on a LAN).",
            LAN_10G,
        ),
        Profile("wan", "WAN / replication", "10G LAN plus BBR with fq pacing, for long or lossy paths.", WAN),
        Profile("100g", "100G", "10G LAN with ESnet's 100G buffer sizes.", G100),
    )
}
DEFAULT_PROFILE = "lan10g"


def numbers(value: str) -> list[int] | None:
    parts = value.split()
    return [int(p) for p in parts] if parts and all(is_digits(p) for p in parts) else None


def plan_entry(entry: Entry, current: str | None) -> tuple[str, str]:
    """(action, note) for one entry against the host's current value: "set", "same" or "skip"."""
    if current is None:
        return "skip", "Not on this host (no such setting)."
    if " ".join(current.split()) == entry.value:
        return "same", "Already set."
    if entry.condition == RAISE:
        have, want = numbers(current), numbers(entry.value)
        if have and want and len(have) == len(want):
            if all(h >= w for h, w in zip(have, want, strict=True)):
                return "skip", "The kernel's value is already as high or higher: never lowered."
            merged = " ".join(str(max(h, w)) for h, w in zip(have, want, strict=True))
            if merged != entry.value:
                return "set", f"Raised to {merged}: no part is lowered."
    return "set", ""


def raised(entry: Entry, current: str) -> str:
    """The value to set: for "raise" entries each number is the higher of the two."""
    have, want = numbers(current), numbers(entry.value)
    if entry.condition == RAISE and have and want and len(have) == len(want):
        return " ".join(str(max(h, w)) for h, w in zip(have, want, strict=True))
    return entry.value
