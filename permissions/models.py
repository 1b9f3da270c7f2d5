"""A recursive apply of one folder's ACL to everything inside it (AclWalk: counted first, how many folders and files,
how many would change, what is skipped and why; then applied on the admin's go-ahead, or stopped; the ACL kept as the
editor gave it and as resolved on the host, so the apply writes exactly what was previewed); and quotas as last read
(QuotaUse: each account's use of each dataset; QuotaPoint: a day's total per account; QuotaReading: when)."""

from django.conf import settings
from django.db import models
from django.urls import reverse

from appliance.models import Host, Operation
from permissions.choices import NO_QUOTA, QuotaKind, WalkStatus


class AclWalk(models.Model):
    host = models.ForeignKey(Host, on_delete=models.CASCADE, related_name="acl_walks")
    dataset = models.CharField(max_length=255)
    path = models.CharField(max_length=4096, blank=True, help_text="The folder below the dataset's mount point.")
    spec = models.JSONField(help_text="The ACL as the editor gave it, with the ids the host resolved.")
    status = models.CharField(max_length=12, choices=WalkStatus.choices, default=WalkStatus.COUNTING)
    preview = models.JSONField(default=dict, help_text="What the count found.")
    applied = models.JSONField(default=dict, help_text="What the apply did (so far, when stopped).")
    stop_requested = models.BooleanField(default=False)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    previewed_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    count_operation = models.ForeignKey(Operation, null=True, on_delete=models.SET_NULL, related_name="+")
    apply_operation = models.ForeignKey(Operation, null=True, on_delete=models.SET_NULL, related_name="+")

    class Meta:
        ordering = ["-created_at"]

    def __str__(self):
        return f"{self.dataset}/{self.path}".rstrip("/")

    def get_absolute_url(self):
        return reverse("permissions-walk", args=[self.pk])

    @property
    def name(self) -> str:
        """What a risky apply asks to be typed: the folder's name (the dataset's for its top folder)."""
        return self.path.rsplit("/", 1)[-1] if self.path else self.dataset

    @property
    def total(self) -> int:
        """Everything the preview met (what the apply's progress is measured against)."""
        return sum(self.preview.get(k, 0) for k in ("folders", "files", "links", "hardlinked", "other"))


class QuotaUse(models.Model):
    """One account's use of one dataset, with its quotas, as the last read found it (`zfs userspace`, `groupspace`,
    `projectspace`): the usage report's rows. Rows are updated in place on (host, dataset, kind, name)."""

    host = models.ForeignKey(Host, on_delete=models.CASCADE, related_name="quota_uses")
    dataset = models.CharField(max_length=255)
    kind = models.CharField(max_length=8, choices=QuotaKind.choices)
    name = models.CharField(max_length=256, help_text="As the host names it (a name, or an id it cannot name).")
    used = models.BigIntegerField(default=0)
    quota = models.BigIntegerField(null=True, blank=True, help_text="Bytes; empty: no quota.")
    objused = models.BigIntegerField(default=0)
    objquota = models.BigIntegerField(null=True, blank=True, help_text="Files and folders; empty: no quota.")
    percent = models.FloatField(
        default=NO_QUOTA, help_text="used / quota in %, kept for sorting (an index, the fullest first); -1: no quota."
    )
    read_at = models.DateTimeField(
        help_text="When a read last found these numbers changed (QuotaReading: the last read)."
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["host", "dataset", "kind", "name"], name="one_use_per_account_and_dataset")
        ]
        indexes = [
            models.Index(fields=["host", "kind", "name"], name="quota_use_account"),
            models.Index(fields=["host", "-percent", "-used"], name="quota_use_fullest"),
            models.Index(fields=["host", "kind", "-percent", "-used"], name="quota_use_fullest_kind"),
        ]

    def __str__(self):
        return f"{self.kind} {self.name} on {self.dataset}"

    @property
    def share(self) -> float | None:
        """% of its quota, None without one."""
        return self.percent if self.quota else None


class QuotaPoint(models.Model):
    """One account's use summed over a host's datasets, one point a day (the last read of the day): the report's
    chart over time."""

    host = models.ForeignKey(Host, on_delete=models.CASCADE, related_name="quota_points")
    kind = models.CharField(max_length=8, choices=QuotaKind.choices)
    name = models.CharField(max_length=256)
    day = models.DateField()
    used = models.BigIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["host", "kind", "name", "day"], name="one_point_per_account_and_day")
        ]

    def __str__(self):
        return f"{self.kind} {self.name} on {self.day}"


class QuotaReading(models.Model):
    """When a host's quotas were last read, how long it took and what the listing left out."""

    host = models.OneToOneField(Host, on_delete=models.CASCADE, related_name="quota_reading")
    read_at = models.DateTimeField()
    seconds = models.FloatField(default=0)
    datasets = models.IntegerField(default=0)
    left_out = models.IntegerField(default=0, help_text="Lines with a name Tarn will not show.")

    def __str__(self):
        return f"quotas of {self.host} read {self.read_at:%Y-%m-%d %H:%M}"
