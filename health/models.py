"""Disk health: each disk's last SMART read and what Tarn made of it, its temperature over time, and each host's
last pass (when, how long, what kept it from reading)."""

from django.conf import settings
from django.db import models
from django.template.defaultfilters import pluralize

from appliance.choices import Every, RunStatus, Weekday
from appliance.models import Host
from appliance.schedules import slot_next
from health.choices import BADGE, HealthState, SelfTestKind
from hostlib import smart


class DiskHealth(models.Model):
    """One disk as smartctl last saw it (a row per device path on a host)."""

    host = models.ForeignKey(Host, on_delete=models.CASCADE, related_name="disk_health")
    device = models.CharField(max_length=128, help_text="The path smartctl reads: /dev/sda, /dev/nvme0.")
    name = models.CharField(max_length=64, help_text="The inventory's name for the disk: sda, nvme0n1.")
    dtype = models.CharField(max_length=40, blank=True, help_text="smartctl's device type: sat, nvme, scsi…")
    protocol = models.CharField(max_length=8, blank=True)
    model = models.CharField(max_length=128, blank=True)
    serial = models.CharField(max_length=128, blank=True)
    firmware = models.CharField(max_length=64, blank=True)
    capacity = models.BigIntegerField(default=0)
    rotation = models.IntegerField(null=True, blank=True, help_text="rpm; 0: solid state")
    hours = models.IntegerField(null=True, blank=True)
    temperature = models.SmallIntegerField(null=True, blank=True)
    temp_warn = models.SmallIntegerField(null=True, blank=True, help_text="The drive's own limit, when it has one.")
    temp_crit = models.SmallIntegerField(null=True, blank=True)
    state = models.CharField(
        max_length=12,
        choices=HealthState.choices,
        help_text="What the last read that answered showed (asleep or silent only until a first one answers).",
    )
    reasons = models.JSONField(default=list)
    power = models.CharField(
        max_length=12, blank=True, help_text="The last read: '' answered, asleep (not woken), silent (no answer)."
    )
    power_note = models.CharField(max_length=300, blank=True)
    passed = models.BooleanField(null=True, blank=True, help_text="The drive's overall self-assessment.")
    attributes = models.JSONField(default=list)  # [{id, name, value, worst, thresh, raw, raw_string, …}]
    nvme = models.JSONField(default=dict)  # the NVMe health log's fields
    error_count = models.IntegerField(null=True, blank=True)
    self_tests = models.JSONField(default=list)  # [{kind, status, passed, hours}], newest first
    self_test_kinds = models.JSONField(default=list)
    self_test_minutes = models.JSONField(default=dict, help_text="How long the drive says each kind takes.")
    testing = models.SmallIntegerField(null=True, blank=True, help_text="% left of a self-test in progress.")
    exit_status = models.SmallIntegerField(default=0)
    flags = models.JSONField(default=list)  # smartctl's exit status bits, decoded
    messages = models.JSONField(default=list)
    counters = models.JSONField(default=dict)  # the counters that must not rise, as of the last read
    rising = models.JSONField(default=list)  # which of them rose at the last read
    read_at = models.DateTimeField(null=True, blank=True)
    answered_at = models.DateTimeField(null=True, blank=True, help_text="The last read it answered.")

    class Meta:
        verbose_name = "disk health"
        verbose_name_plural = "disk health"
        ordering = ["host", "name"]
        constraints = [models.UniqueConstraint(fields=["host", "device"], name="one_health_row_per_device")]

    def __str__(self):
        return f"{self.host}:{self.device}"

    @property
    def shown(self) -> str:
        """What a badge says: not answering over everything, then failing or watch (even asleep), then asleep."""
        if self.power == HealthState.SILENT:
            return HealthState.SILENT
        if self.power == HealthState.ASLEEP and self.state not in (HealthState.FAILING, HealthState.WATCH):
            return HealthState.ASLEEP
        return self.state

    @property
    def badge(self) -> str:
        """The badge class the shown state is drawn with."""
        return BADGE[self.shown]

    @property
    def shown_label(self) -> str:
        label = HealthState(self.shown).label
        return f"{label} (asleep)" if self.power == HealthState.ASLEEP and self.shown != HealthState.ASLEEP else label

    @property
    def said(self) -> list[str]:
        """smartctl's exit status in words (the bits hostlib.smart decodes into flags)."""
        words = dict(smart.EXIT_BITS)
        return [words.get(flag, flag) for flag in self.flags]

    @property
    def shown_reasons(self) -> list[str]:
        return ([self.power_note] if self.power and self.power_note else []) + list(self.reasons)


class TemperaturePoint(models.Model):
    disk = models.ForeignKey(DiskHealth, on_delete=models.CASCADE, related_name="temperatures")
    at = models.DateTimeField()
    celsius = models.SmallIntegerField()

    class Meta:
        indexes = [models.Index(fields=["disk", "at"], name="temperature_disk_at")]

    def __str__(self):
        return f"{self.celsius} °C at {self.at:%Y-%m-%d %H:%M}"


class HealthPass(models.Model):
    """A host's last health pass: when it ran, how long it took, and what kept it from reading anything."""

    host = models.OneToOneField(Host, primary_key=True, on_delete=models.CASCADE, related_name="health_pass")
    at = models.DateTimeField(null=True, blank=True)
    seconds = models.FloatField(default=0)
    disks = models.PositiveIntegerField(default=0)
    error = models.CharField(max_length=500, blank=True)

    class Meta:
        verbose_name = "health pass"
        verbose_name_plural = "health passes"

    def __str__(self):
        return f"health pass of host {self.pk}"


class SelfTestSchedule(models.Model):
    """Self-test every disk of a host that can run it, on a calendar: one disk per vdev at a time, a pool that is
    scrubbing or resilvering left out for that time."""

    host = models.ForeignKey(Host, on_delete=models.CASCADE, related_name="self_test_schedules")
    kind = models.CharField(max_length=8, choices=SelfTestKind.choices)
    every = models.CharField(max_length=8, choices=Every.choices)
    weekday = models.PositiveSmallIntegerField(default=Weekday.SUNDAY, choices=Weekday.choices, help_text="Weekly.")
    day = models.PositiveSmallIntegerField(default=1, help_text="Day of the month, 1–28 (monthly).")
    hour = models.PositiveSmallIntegerField(default=2, help_text="Hour of the day, 0–23 (the server's time zone).")
    enabled = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_started_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "self-test schedule"
        ordering = ["host", "kind", "every"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(hour__lte=23, day__gte=1, day__lte=28, weekday__lte=6),
                name="self_test_slot_in_range",
            )
        ]

    def __str__(self):
        return f"{self.kind} self-test {self.get_every_display().lower()}"

    @property
    def next_run(self):
        """When its slot next comes (local time), or None while it is off."""
        return slot_next(self) if self.enabled else None


class SelfTestRun(models.Model):
    """Self-tests of many disks, group after group (a group: at most one disk of each vdev). Its status is in the
    core's run vocabulary (running, then succeeded or cancelled); each disk's verdict (passed, failed: …, skipped:
    …) is its own, in results. No one Operation runs it (each read moves it on), so it keeps its status itself."""

    host = models.ForeignKey(Host, on_delete=models.CASCADE, related_name="self_test_runs")
    schedule = models.ForeignKey(SelfTestSchedule, null=True, blank=True, on_delete=models.SET_NULL)
    kind = models.CharField(max_length=8, choices=SelfTestKind.choices)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    status = models.CharField(max_length=10, choices=RunStatus.choices, default=RunStatus.RUNNING)
    groups = models.JSONField(default=list)  # [[device, …], …]
    current = models.PositiveSmallIntegerField(default=0)
    group_started_at = models.DateTimeField(null=True, blank=True)
    results = models.JSONField(default=dict)  # {device: "passed" | "failed: …" | "skipped: …" | …}
    baseline = models.JSONField(default=dict)  # {device: the newest log entry when its test was started}
    started_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "self-test run"
        ordering = ["-started_at", "-pk"]
        constraints = [
            models.UniqueConstraint(
                fields=["host"], condition=models.Q(status="running"), name="one_self_test_run_per_host"
            )
        ]

    def __str__(self):
        return f"{self.kind} self-tests on {self.host}"

    @property
    def devices(self) -> int:
        return sum(len(g) for g in self.groups)

    @property
    def percent(self) -> int:
        return int(100 * len(self.results) / self.devices) if self.devices else 100

    @property
    def verdict(self) -> tuple[str, str]:
        """(badge, words) for a run that ended: what its disks said, not only that the run finished ("1 disk
        failed" in red, though every group ran)."""
        if self.status != RunStatus.SUCCEEDED:
            return ("failed" if self.status == RunStatus.FAILED else "reverted", self.get_status_display())
        said = [result.split(":", 1)[0] for result in self.results.values()]
        if not said:
            return "stopped", "No disk tested"
        failed, passed = said.count("failed"), said.count("passed")
        if failed:
            return "failed", f"{failed} disk{pluralize(failed)} failed"
        if passed < len(said):
            return "stopped", f"{passed} of {len(said)} passed"
        return "succeeded", "All passed" if passed > 1 else "Passed"
