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


RULES = (
    Rule("pool_state", "Pool not ONLINE", Level.CRITICAL, help="DEGRADED, FAULTED, SUSPENDED, UNAVAIL…"),
    Rule("pool_errors", "Device errors", Level.WARNING, help="Read, write or checksum errors on a pool's devices."),
    Rule("capacity_warning", "Pool filling", Level.WARNING, 80, "%", 50, 99, "Capacity at or above this."),
    Rule("capacity_critical", "Pool nearly full", Level.CRITICAL, 90, "%", 50, 99,
         "Capacity at or above this: ZFS slows down and may not free space."),
    Rule("scrub_errors", "Scrub found errors", Level.CRITICAL, help="The last scrub repaired or could not repair data."),
    Rule("scrub_overdue", "Scrub overdue", Level.WARNING, 35, "days", 1, 365, "The last scrub ended longer ago than this (a pool never scrubbed has no date to go by)."),
    Rule("snapshot_budget", "Too many snapshots", Level.WARNING, 10_000, "snapshots", 100, 1_000_000,
         "Listing, replication and boot slow down beyond this."),
    Rule("host_unreachable", "Host unreachable", Level.CRITICAL, help="Tarn's last look at the host failed."),
    Rule("benchmark_failed", "Benchmark failed", Level.WARNING, 24, "hours", 1, 720,
         "A run that failed within this many hours."),
    Rule("benchmark_drop", "Benchmark dropped", Level.WARNING, 7, "days", 1, 90,
         "A scheduled run flagged below its history within this many days."),
)  # fmt: skip
RULE = {r.key: r for r in RULES}
WEBHOOK_TIMEOUT = 5  # seconds per attempt
WEBHOOK_ATTEMPTS = 3
SMTP_TIMEOUT = 10
