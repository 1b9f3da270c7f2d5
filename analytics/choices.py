"""Choices for alerts and their channels, and the rules with their default levels and thresholds."""

from dataclasses import dataclass

from django.db import models


class Level(models.TextChoices):
    WARNING = "warning", "Warning"
    CRITICAL = "critical", "Critical"


class ChannelKind(models.TextChoices):
    EMAIL = "email", "E-mail (SMTP)"
    WEBHOOK = "webhook", "Webhook (JSON POST)"


class SmtpSecurity(models.TextChoices):
    STARTTLS = "starttls", "STARTTLS (port 587)"
    TLS = "tls", "TLS from the start (port 465)"
    NONE = "none", "None (a relay on a trusted network)"


@dataclass(frozen=True)
class Rule:
    key: str
    title: str
    level: str
    threshold: float | None = None  # the rule's number (percent, days), editable
    unit: str = ""
    low: float = 0
    high: float = 0
    help: str = ""


RULES = [  # later apps add theirs (analytics.hooks.alert_source)
    Rule("pool_state", "Pool not ONLINE", Level.CRITICAL, help="DEGRADED, FAULTED, SUSPENDED, UNAVAIL…"),
    Rule("pool_errors", "Device errors", Level.WARNING, help="Read, write or checksum errors on a pool's devices."),
    Rule("capacity_warning", "Pool filling", Level.WARNING, 80, "%", 50, 99, "Capacity at or above this."),
    Rule(
        "capacity_critical",
        "Pool nearly full",
        Level.CRITICAL,
        90,
        "%",
        50,
        99,
        "Capacity at or above this: ZFS slows down and may not free space.",
    ),
    Rule(
        "scrub_errors", "Scrub found errors", Level.CRITICAL, help="The last scrub repaired or could not repair data."
    ),
    Rule(
        "scrub_overdue",
        "Scrub overdue",
        Level.WARNING,
        35,
        "days",
        1,
        365,
        "The last scrub ended longer ago than this (a pool never scrubbed has no date to go by).",
    ),
    Rule(
        "snapshot_budget",
        "Too many snapshots",
        Level.WARNING,
        10_000,
        "snapshots",
        100,
        1_000_000,
        "Listing, replication and boot slow down beyond this.",
    ),
    Rule("host_unreachable", "Host unreachable", Level.CRITICAL, help="Tarn's last look at the host failed."),
    Rule(
        "benchmark_failed",
        "Benchmark failed",
        Level.WARNING,
        24,
        "hours",
        1,
        720,
        "A run that failed within this many hours.",
    ),
    Rule(
        "benchmark_drop",
        "Benchmark dropped",
        Level.WARNING,
        7,
        "days",
        1,
        90,
        "A scheduled run flagged below its history within this many days.",
    ),
]
RULE = {r.key: r for r in RULES}
WEBHOOK_TIMEOUT = 5  # seconds per attempt
WEBHOOK_ATTEMPTS = 3
SMTP_TIMEOUT = 10


# --- Series: steps, time ranges and the analytics page's charts -------------------------------------------------

RAW, FIVE_MINUTES, HOUR = 0, 300, 3600
SAMPLER_LIMITS = {"interval": (5, 300, "seconds"), "raw_hours": (1, 168, "hours"), "rollup_days": (1, 365, "days")}


@dataclass(frozen=True)
class Range:
    key: str
    title: str
    seconds: int
    step: int  # which rows draw it: raw samples or averages, so no range loads more points than it draws


RANGES = {
    r.key: r
    for r in (
        Range("15m", "15 minutes", 900, RAW),
        Range("1h", "1 hour", 3600, RAW),
        Range("6h", "6 hours", 6 * 3600, FIVE_MINUTES),
        Range("24h", "24 hours", 24 * 3600, FIVE_MINUTES),
        Range("7d", "7 days", 7 * 86400, HOUR),
        Range("30d", "30 days", 30 * 86400, HOUR),
    )
}


@dataclass(frozen=True)
class Chart:
    key: str
    title: str
    unit: str  # B/s, ops/s, ms, %
    group: str  # the series group its overview sums
    metrics: tuple[tuple[str, str], ...]  # (metric, label)
    breakdowns: tuple[tuple[str, str], ...] = ()  # (group, "by …"): click to break the chart down
    help: str = ""

    @property
    def gauge(self) -> bool:
        """A level (a wait, a ratio): subjects are drawn side by side, never added up."""
        return self.unit in ("ms", "%")


CHARTS = {
    c.key: c
    for c in (
        Chart(
            "pool_bw",
            "Pool bandwidth",
            "B/s",
            "pool",
            (("r_bps", "read"), ("w_bps", "write")),
            (("pool", "pool"), ("vdev", "vdev"), ("dataset", "dataset")),
            "Bytes to and from the pools' disks (zpool vdev counters); by dataset: what applications read and wrote.",
        ),
        Chart(
            "pool_ops",
            "Pool operations",
            "ops/s",
            "pool",
            (("r_ops", "read"), ("w_ops", "write")),
            (("pool", "pool"), ("vdev", "vdev"), ("dataset", "dataset")),
        ),
        Chart(
            "pool_lat",
            "Pool average wait",
            "ms",
            "pool",
            (("r_ms", "read"), ("w_ms", "write")),
            (("pool", "pool"),),
            "Average time an I/O spent queued and on the disk (zpool iostat -l total_wait) over each interval.",
        ),
        Chart(
            "arc",
            "ARC hit ratio",
            "%",
            "arc",
            (("hit_pct", "ARC"), ("l2_hit_pct", "L2ARC")),
            (),
            "Reads served from RAM (and the L2ARC); below ~90 % on a read-heavy NAS, more RAM usually helps.",
        ),
        Chart(
            "link",
            "Link throughput",
            "B/s",
            "link",
            (("rx_bps", "received"), ("tx_bps", "sent")),
            (("link", "interface"),),
        ),
        Chart(
            "smb",
            "SMB throughput",
            "B/s",
            "smb",
            (("read_bps", "clients read"), ("write_bps", "clients wrote")),
            (("smb_client", "client"), ("smb_share", "share"), ("smb_user", "user")),
            "Bytes on each SMB connection (ss); smbstatus names its user and shares.",
        ),
        Chart(
            "nfs",
            "NFS throughput",
            "B/s",
            "nfs",
            (("read_bps", "clients read"), ("write_bps", "clients wrote")),
            (("nfs_client", "client"), ("nfs_export", "export"), ("nfs_version", "version")),
            "Bytes on each NFS connection (ss); an export is what its client mounted (all of a client's bytes count "
            "for each export it has).",
        ),
        Chart(
            "nfs_ops",
            "NFS operations",
            "ops/s",
            "nfs",
            (("ops", "v3 and v4 operations"),),
            (),
            "Every NFS request nfsd served (/proc/net/rpc/nfsd): metadata-heavy work shows here before it shows as bytes.",
        ),
        Chart("cpu", "NAS CPU", "%", "cpu", (("busy_pct", "busy"),), (), "All cores; the sampler's own cost is below."),
    )
}
BREAKDOWN_LIMIT = 8  # lines in a breakdown; the rest add up to "others"
