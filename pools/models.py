"""The storage inventory: what a host's pools, vdevs, disks, datasets and snapshots looked like when observed.

Rows are refreshed by the host worker (pools.services.inventory_refresh): pages read these, never zfs.
"""

from datetime import timedelta

from django.db import models
from django.urls import reverse

from appliance.models import Host
from appliance.schedules import interval_due, interval_next
from pools.choices import CAPACITY_ALERT, CAPACITY_WARN, DatasetType, VdevRole


class Pool(models.Model):
    """A ZFS pool on a host, with its usage, health and last scan."""

    host = models.ForeignKey(Host, on_delete=models.CASCADE, related_name="pools")
    name = models.CharField(max_length=255)
    guid = models.CharField(max_length=24)
    state = models.CharField(max_length=16)
    size = models.BigIntegerField(default=0)
    allocated = models.BigIntegerField(default=0)
    free = models.BigIntegerField(default=0)
    fragmentation = models.PositiveSmallIntegerField(default=0)
    capacity = models.PositiveSmallIntegerField(default=0)
    error_count = models.BigIntegerField(default=0)
    scan_function = models.CharField(max_length=12, blank=True)
    scan_state = models.CharField(max_length=12, blank=True)
    scan_percent = models.FloatField(default=0)
    scan_errors = models.BigIntegerField(default=0)
    scan_end = models.DateTimeField(null=True, blank=True)
    observed_at = models.DateTimeField()

    class Meta:
        ordering = ["host", "name"]
        constraints = [models.UniqueConstraint(fields=["host", "name"], name="one_pool_name_per_host")]

    def __str__(self):
        return self.name

    def get_absolute_url(self):
        return reverse("pool-detail", args=[self.pk])

    @property
    def capacity_level(self) -> str:
        return "alert" if self.capacity >= CAPACITY_ALERT else "warn" if self.capacity >= CAPACITY_WARN else "ok"


class Vdev(models.Model):
    """One node of a pool's vdev tree (a mirror, a raidz group, a disk…)."""

    pool = models.ForeignKey(Pool, on_delete=models.CASCADE, related_name="vdevs")
    parent = models.ForeignKey("self", null=True, on_delete=models.CASCADE, related_name="children")
    position = models.PositiveIntegerField()
    depth = models.PositiveSmallIntegerField(default=0)
    name = models.CharField(max_length=255)
    type = models.CharField(max_length=16)
    role = models.CharField(max_length=8, choices=VdevRole.choices)
    state = models.CharField(max_length=16)
    path = models.CharField(max_length=255, blank=True)
    size = models.BigIntegerField(default=0)
    allocated = models.BigIntegerField(default=0)
    read_errors = models.BigIntegerField(default=0)
    write_errors = models.BigIntegerField(default=0)
    checksum_errors = models.BigIntegerField(default=0)

    class Meta:
        ordering = ["pool", "position"]

    def __str__(self):
        return f"{self.pool}:{self.name}"

    @property
    def errors(self) -> int:
        return self.read_errors + self.write_errors + self.checksum_errors


class Disk(models.Model):
    """A block device on a host and what it is used for."""

    host = models.ForeignKey(Host, on_delete=models.CASCADE, related_name="disks")
    name = models.CharField(max_length=64)
    path = models.CharField(max_length=255)
    by_id = models.CharField(max_length=255, blank=True)
    size = models.BigIntegerField(default=0)
    model = models.CharField(max_length=128, blank=True)
    serial = models.CharField(max_length=128, blank=True)
    media = models.CharField(max_length=8)
    fstype = models.CharField(max_length=32, blank=True)
    mounted = models.BooleanField(default=False)
    pool = models.ForeignKey(Pool, null=True, blank=True, on_delete=models.SET_NULL, related_name="disks")
    vdev_role = models.CharField(max_length=8, blank=True)
    observed_at = models.DateTimeField()

    class Meta:
        ordering = ["host", "name"]
        constraints = [models.UniqueConstraint(fields=["host", "name"], name="one_disk_name_per_host")]

    def __str__(self):
        return self.by_id or self.path

    @property
    def is_free(self) -> bool:
        return self.pool_id is None and not self.fstype and not self.mounted

    @property
    def usage(self) -> str:
        if self.pool_id:
            return f"in pool {self.pool.name} ({self.vdev_role})"
        if self.mounted:
            return "system (mounted)"
        if self.fstype == "zfs_member":
            return "old ZFS label (exported or destroyed pool)"
        if self.fstype:
            return f"holds {self.fstype}"
        return "free"


class Dataset(models.Model):
    """A filesystem or zvol, with the properties Tarn shows and where each value comes from."""

    host = models.ForeignKey(Host, on_delete=models.CASCADE, related_name="datasets")
    pool = models.ForeignKey(Pool, on_delete=models.CASCADE, related_name="datasets")
    name = models.CharField(max_length=255)
    type = models.CharField(max_length=12, choices=DatasetType.choices)
    depth = models.PositiveSmallIntegerField(default=0)
    used = models.BigIntegerField(default=0)
    available = models.BigIntegerField(default=0)
    referenced = models.BigIntegerField(default=0)
    compressratio = models.CharField(max_length=12, blank=True)
    mountpoint = models.CharField(max_length=255, blank=True)
    properties = models.JSONField(default=dict)  # {key: {"value", "source", "from"}}
    snapshot_count = models.PositiveIntegerField(default=0)
    observed_at = models.DateTimeField()
    # What the inventory last read, hashed: its own `zfs list -j` entry, and its snapshots' lines. A refresh that reads
    # the same leaves the row and its snapshots alone ('' until first read).
    listing_digest = models.CharField(max_length=32, blank=True, editable=False)
    snapshot_digest = models.CharField(max_length=32, blank=True, editable=False)

    class Meta:
        ordering = ["host", "name"]
        constraints = [models.UniqueConstraint(fields=["host", "name"], name="one_dataset_name_per_host")]

    def __str__(self):
        return self.name

    def get_absolute_url(self):
        return reverse("dataset-detail", args=[self.pk])

    @property
    def short_name(self) -> str:
        return self.name.rsplit("/", 1)[-1]

    @property
    def encryption(self) -> dict:
        """{cipher, root, key (available | unavailable), format, location} as the inventory last read them; {} for
        a dataset that is not encrypted."""
        value = {k: str((self.properties.get(k) or {}).get("value", "")) for k in ENCRYPTION_FIELDS}
        if value["encryption"] in ("", "off", "-"):
            return {}
        return {
            "cipher": value["encryption"],
            "root": value["encryptionroot"],
            "key": value["keystatus"],
            "format": value["keyformat"],
            "location": value["keylocation"],
        }

    @property
    def locked(self) -> bool:
        """Encrypted and its key not loaded: nothing of it can be read, and it is not mounted."""
        return self.encryption.get("key") == "unavailable"


ENCRYPTION_FIELDS = ("encryption", "encryptionroot", "keystatus", "keyformat", "keylocation")


class Snapshot(models.Model):
    """A snapshot of a dataset. Listed from here (paginated), never by asking zfs on a page load."""

    # host repeats dataset.host so the host-wide list (100,000 rows) filters, sorts and counts from one index
    host = models.ForeignKey(Host, on_delete=models.CASCADE, related_name="+", null=True)
    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="snapshots")
    name = models.CharField(max_length=255)
    used = models.BigIntegerField(default=0)
    referenced = models.BigIntegerField(default=0)
    created_at = models.DateTimeField(db_index=True)
    # The pool's transaction group that made it: what orders a dataset's snapshots (newer, older, newest). creation
    # has one-second resolution (a recursive or scheduled set, or two on a fast host, tie) and follows the clock.
    # 0: read before Tarn kept it, until the next refresh (order by created_at then: NEWEST_FIRST's second key).
    createtxg = models.PositiveBigIntegerField(default=0)
    holds = models.PositiveIntegerField(default=0, help_text="zfs holds on it; a held snapshot cannot be destroyed.")

    NEWEST_FIRST = ("-createtxg", "-created_at")
    OLDEST_FIRST = ("createtxg", "created_at")

    class Meta:
        ordering = ["dataset", "-createtxg", "-created_at"]
        constraints = [models.UniqueConstraint(fields=["dataset", "name"], name="one_snapshot_name_per_dataset")]
        indexes = [
            models.Index(fields=["dataset", "createtxg"], name="snapshot_dataset_txg"),
            models.Index(fields=["dataset", "created_at"]),
            models.Index(fields=["host", "created_at"]),
            models.Index(fields=["host", "name"]),
        ]

    def __str__(self):
        return f"{self.dataset.name}@{self.name}"

    def save(self, *args, **kwargs):
        if self.host_id is None:
            self.host_id = self.dataset.host_id
        super().save(*args, **kwargs)

    @property
    def full_name(self) -> str:
        return f"{self.dataset.name}@{self.name}"


class SnapshotTask(models.Model):
    """Take snapshots of a dataset every so often and prune the old ones (run by Celery beat)."""

    host = models.ForeignKey(Host, on_delete=models.CASCADE, related_name="snapshot_tasks")
    dataset = models.CharField(max_length=255)
    recursive = models.BooleanField(default=False, help_text="Also every dataset below, at the same instant.")
    exclude = models.TextField(blank=True, help_text="Datasets below to leave out of pruning, one per line.")
    every_minutes = models.PositiveIntegerField(default=60, help_text="How often: 15, 60, 1440 (daily)…")
    prefix = models.SlugField(
        max_length=40,
        default="auto",
        help_text="Snapshots are named <prefix>-YYYY-MM-DD_HH-MM; only those are ever pruned.",
    )
    keep_count = models.PositiveIntegerField(null=True, blank=True, help_text="Keep at most this many (newest).")
    keep_days = models.PositiveIntegerField(null=True, blank=True, help_text="Delete those older than this.")
    enabled = models.BooleanField(default=True)
    last_run_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["host", "dataset", "prefix"]
        constraints = [
            models.UniqueConstraint(fields=["host", "dataset", "prefix"], name="one_task_per_dataset_prefix")
        ]

    def __str__(self):
        return f"{self.dataset} every {self.every_minutes} min ({self.prefix})"

    def is_due(self, now) -> bool:
        return self.enabled and interval_due(self.last_run_at, timedelta(minutes=self.every_minutes), now)

    @property
    def next_run(self):
        """When beat (every minute) takes the next snapshot, or None while it is off."""
        return interval_next(self.last_run_at, timedelta(minutes=self.every_minutes)) if self.enabled else None

    def snapshot_name(self, now) -> str:
        return f"{self.prefix}-{now:%Y-%m-%d_%H-%M}"


class ImportablePool(models.Model):
    """A pool `zpool import` found on a host's disks at the last scan (exported, or from another machine)."""

    host = models.ForeignKey(Host, on_delete=models.CASCADE, related_name="importable_pools")
    name = models.CharField(max_length=255)
    guid = models.CharField(max_length=24)
    state = models.CharField(max_length=16)
    status = models.TextField(blank=True)
    action = models.TextField(blank=True)
    observed_at = models.DateTimeField()

    class Meta:
        ordering = ["host", "name"]

    def __str__(self):
        return f"{self.name} ({self.guid})"


class MediaSpeed(models.Model):
    """The per-disk figures the pool-creation preview multiplies (editable: measure your own disks with fio)."""

    media = models.CharField(max_length=8, unique=True)  # hdd, ssd, nvme
    mb_s = models.PositiveIntegerField("sequential MB/s", help_text="One disk's streaming speed.")
    iops = models.PositiveIntegerField("random IOPS", help_text="One disk's small random reads per second.")

    class Meta:
        ordering = ["media"]

    def __str__(self):
        return f"{self.media}: {self.mb_s} MB/s, {self.iops} IOPS"


class ScrubSchedule(models.Model):
    """Scrub a pool every N days (beat checks hourly); a monthly scrub finds silent errors while they can be fixed."""

    host = models.ForeignKey(Host, on_delete=models.CASCADE, related_name="scrub_schedules")
    pool = models.CharField(max_length=255)
    every_days = models.PositiveSmallIntegerField(default=30, help_text="30 is the usual choice; 7 for busy pools.")
    last_run_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["host", "pool"], name="one_scrub_schedule_per_pool")]

    def __str__(self):
        return f"scrub {self.pool} every {self.every_days} days"

    def is_due(self, now) -> bool:
        return interval_due(self.last_run_at, timedelta(days=self.every_days), now)

    @property
    def next_run(self):
        """When the next scrub is due (beat looks hourly; a pool scanning then waits for the next look)."""
        return interval_next(self.last_run_at, timedelta(days=self.every_days))
