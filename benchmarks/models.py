"""Benchmark runs: what ran where (its manifest: argv, versions, pool, dataset properties, ARC, kernel), its results
per job and the per-second series, kept so a run can be repeated and compared."""

from django.db import models
from django.urls import reverse
from django.utils import timezone

from appliance.choices import RUN_ENDS
from appliance.models import Host, Operation
from appliance.runs import OperationRun, RunQuerySet
from appliance.schedules import CronError, cron_parse
from benchmarks.choices import RunKind
from benchmarks.profiles import Profile
from hostlib.fio import FioJob


class CustomProfile(models.Model):
    """A profile an admin made by copying a built-in one and changing its fields (validated as any fio job)."""

    title = models.CharField(max_length=80, unique=True)
    represents = models.CharField(max_length=200, blank=True)
    based_on = models.CharField(max_length=40, blank=True)
    jobs = models.JSONField(default=list, help_text="FioJob fields, one dict per job.")
    properties = models.JSONField(default=dict, help_text="The scratch dataset's properties.")
    created_by = models.ForeignKey("appliance.User", null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["title"]

    def __str__(self):
        return self.title

    @property
    def key(self) -> str:
        return f"custom-{self.pk}"

    def as_profile(self) -> Profile:
        return Profile(
            self.key,
            self.title,
            self.represents or f"A copy of {self.based_on}",
            tuple(FioJob(**j) for j in self.jobs),
            properties=dict(self.properties),
        )


class Suite(models.Model):
    """A matrix run in one go: profiles × the values of one dataset property (e.g. sync standard vs always), each
    combination a Run; its page compares them all."""

    host = models.ForeignKey(Host, on_delete=models.CASCADE, related_name="benchmark_suites")
    title = models.CharField(max_length=200)
    target = models.CharField(max_length=255)
    profiles = models.JSONField(default=list)
    prop = models.CharField(max_length=40, blank=True, help_text="The scratch dataset property swept.")
    values = models.JSONField(default=list)
    schedule = models.ForeignKey("Schedule", null=True, blank=True, on_delete=models.SET_NULL, related_name="suites")
    operation = models.ForeignKey(Operation, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_by = models.ForeignKey("appliance.User", null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self):
        return self.title

    def get_absolute_url(self):
        return reverse("benchmark-suite", args=[self.pk])


class Schedule(models.Model):
    """Profiles run on a target on a cron schedule (a django-celery-beat PeriodicTask fires a suite of them); its
    runs are the target's history, and a run whose bandwidth falls more than drop_percent below the median of the
    same profile's previous scheduled runs is flagged."""

    host = models.ForeignKey(Host, on_delete=models.CASCADE, related_name="benchmark_schedules")
    name = models.CharField(max_length=80)
    profiles = models.JSONField(default=list)
    target = models.CharField(max_length=255)
    size = models.CharField(max_length=8, blank=True)
    runtime = models.PositiveIntegerField(default=0)
    cache_ok = models.BooleanField(default=False)
    minute = models.CharField(max_length=60, default="0")
    hour = models.CharField(max_length=60, default="3")
    day_of_week = models.CharField(max_length=60, default="0")
    drop_percent = models.PositiveSmallIntegerField(default=10)
    enabled = models.BooleanField(default=True)
    last_fired_at = models.DateTimeField(null=True, blank=True)
    last_message = models.CharField(max_length=500, blank=True)
    task = models.OneToOneField(
        "django_celery_beat.PeriodicTask", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_by = models.ForeignKey("appliance.User", null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["host", "name"], name="benchmark_schedule_unique_name")]

    def __str__(self):
        return self.name

    def get_absolute_url(self):
        return reverse("benchmark-schedule", args=[self.pk])

    @property
    def cron(self) -> str:
        return f"{self.minute} {self.hour} * * {self.day_of_week}"

    @property
    def next_run(self):
        """When beat fires it next (local time), or None while it is paused (or its line never fires)."""
        try:
            return cron_parse(self.cron).next_after(timezone.localtime()) if self.enabled else None
        except CronError:
            return None


class Run(OperationRun, models.Model):
    """One benchmark run of a profile against a target on a host. Its status is read from its Operation (a suite's
    runs share the suite's) and its own end (appliance.runs)."""

    OWN_END, STARTED = "outcome", "started_at"

    host = models.ForeignKey(Host, on_delete=models.CASCADE, related_name="benchmark_runs")
    profile = models.CharField(max_length=40)
    title = models.CharField(max_length=200)
    kind = models.CharField(max_length=10, choices=RunKind.choices, default=RunKind.STORAGE)
    target = models.CharField(
        max_length=255,
        help_text="The dataset the scratch dataset is made under, the share, "
        "or (network) the host's address iperf3 reaches.",
    )
    share = models.CharField(
        max_length=1024,
        blank=True,
        help_text="SMB and NFS runs: the share's name or the export's path, mounted on the host over loopback.",
    )
    properties = models.JSONField(default=dict, help_text="Scratch dataset properties set for this run.")
    cache_ok = models.BooleanField(default=False, help_text="Run although the working set fits in the ARC.")
    peer = models.ForeignKey(
        Host,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="+",
        help_text="Network runs: the host iperf3's client runs on.",
    )
    suite = models.ForeignKey(Suite, null=True, blank=True, on_delete=models.SET_NULL, related_name="runs")
    schedule = models.ForeignKey(Schedule, null=True, blank=True, on_delete=models.SET_NULL, related_name="runs")
    flag = models.CharField(max_length=200, blank=True, help_text="A drop against the schedule's history.")
    jobs = models.JSONField(default=list, help_text="The fio jobs as run (fields), in order.")
    outcome = models.CharField(
        max_length=10,
        choices=RUN_ENDS,
        blank=True,
        help_text="How the run itself ended (a suite's runs each end on their own); empty until then.",
    )
    progress = models.PositiveSmallIntegerField(default=0)
    current = models.JSONField(default=dict, help_text="Live: the job running and its bandwidth.")
    manifest = models.JSONField(default=dict)
    results = models.JSONField(default=list, help_text="Per job: the parsed fio (or iperf3) result.")
    series = models.JSONField(default=list, help_text="Per job: [[ms, KiB/s, direction], …] once a second.")
    raw = models.TextField(blank=True, help_text="The last job's final fio JSON.")
    message = models.CharField(max_length=1000, blank=True)
    cancel_requested = models.BooleanField(default=False)
    operation = models.ForeignKey(Operation, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_by = models.ForeignKey("appliance.User", null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True, help_text="When its worker began it.")
    finished_at = models.DateTimeField(null=True, blank=True)

    objects = RunQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["host", "-created_at"], name="run_host_recent")]

    def __str__(self):
        return self.title

    def get_absolute_url(self):
        return reverse("benchmark-run", args=[self.pk])

    @property
    def bandwidth(self) -> float:
        """The headline figure: bytes per second summed over its jobs and directions."""
        return float(sum((r.get(d) or {}).get("bw_bytes") or 0 for r in self.results for d in ("read", "write")))

    @property
    def scratch(self) -> str:
        return f"{self.target}/tarnbench-{self.pk}"
