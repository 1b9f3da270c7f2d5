"""Choices for pools, vdevs, disks and datasets."""

from django.db import models


class VdevRole(models.TextChoices):
    DATA = "data", "Data"
    SPECIAL = "special", "Special"
    LOG = "log", "Log (SLOG)"
    DEDUP = "dedup", "Dedup"
    CACHE = "cache", "Cache (L2ARC)"
    SPARE = "spare", "Spare"


class Layout(models.TextChoices):
    STRIPE = "stripe", "Stripe (no redundancy)"
    MIRROR = "mirror", "Mirror"
    RAIDZ1 = "raidz1", "RAID-Z1 (1 parity)"
    RAIDZ2 = "raidz2", "RAID-Z2 (2 parity)"
    RAIDZ3 = "raidz3", "RAID-Z3 (3 parity)"
    DRAID1 = "draid1", "dRAID1"
    DRAID2 = "draid2", "dRAID2"
    DRAID3 = "draid3", "dRAID3"


class DatasetType(models.TextChoices):
    FILESYSTEM = "filesystem", "Filesystem"
    VOLUME = "volume", "Zvol"


CAPACITY_WARN = 80  # percent: performance starts to suffer
CAPACITY_ALERT = 90  # percent: act now
SNAPSHOT_BUDGET = 10_000  # total per host before listing and boot get slow (TrueNAS warns at the same number)
