"""Choices for benchmark runs."""

from django.db import models

from benchmarks.profiles import BUILT_IN


class RunKind(models.TextChoices):
    STORAGE = "storage", "Dataset (local)"
    SMB = "smb", "SMB share over loopback"
    NFS = "nfs", "NFS export over loopback"
    NETWORK = "network", "Network (iperf3)"


# A run may use at most this share of the target's free space (the pool must never fill).
FREE_SPACE_SHARE = 0.5
POLL_SECONDS = 2  # how often the worker looks for a cancel (in the database) while following a run…
RAMP_ENOUGH = 3  # seconds of ramp in which the manifest is read (not measured); a shorter one reads it before
HOST_EVERY = 5  # …asks the host about the unit every this many checks until the job's time is up
BANDWIDTH_EVERY = 5  # …and reads its bandwidth log every this many checks
# Scratch dataset properties a suite may sweep or a run may set, and the values offered.
PROPERTIES = {
    "sync": ("standard", "always", "disabled"),
    "recordsize": ("4K", "8K", "16K", "32K", "64K", "128K", "256K", "512K", "1M"),
    "compression": ("off", "lz4", "zstd"),
    "primarycache": ("all", "metadata", "none"),
    "logbias": ("latency", "throughput"),
}
DROP_HISTORY = 5  # a scheduled run is compared with the median of this many previous runs
# A benchmark loads the pool for minutes and one runs at a time per host: a schedule fires at most once an hour (its
# minute is one number, so in each hour the hour and day-of-week fields choose it fires once), and a host has at most
# this many enabled schedules (beyond it their firings could not all run anyway; each is a beat entry).
SCHEDULE_MINUTE_HELP = "One number, 0-59: a schedule fires at most once an hour (hour and day of week say which hours)."
SCHEDULES_ENABLED_MAX = 20
STORAGE_PROFILES = [p.key for p in BUILT_IN if p.jobs]
NETWORK_PROFILES = [p.key for p in BUILT_IN if p.network]
