"""Benchmark runs: what ran where (its manifest: argv, versions, pool, dataset properties, ARC, kernel), its results
per job and the per-second series, kept so a run can be repeated and compared."""

from django.db import models
from django.urls import reverse

from appliance.models import Host, Operation
from benchmarks.choices import RunStatus


class Run(models.Model):
    """One benchmark run of a profile against a target on a host."""

    host = models.ForeignKey(Host, on_delete=models.CASCADE, related_name="benchmark_runs")
    profile = models.CharField(max_length=40)
    title = models.CharField(max_length=200)
    target = models.CharField(max_length=255, help_text="The dataset the scratch dataset is made under.")
    jobs = models.JSONField(default=list, help_text="The fio jobs as run (fields), in order.")
    status = models.CharField(max_length=10, choices=RunStatus.choices, default=RunStatus.QUEUED)
    progress = models.PositiveSmallIntegerField(default=0)
    current = models.JSONField(default=dict, help_text="Live: the job running and its bandwidth.")
    manifest = models.JSONField(default=dict)
    results = models.JSONField(default=list, help_text="Per job: the parsed fio result.")
    series = models.JSONField(default=list, help_text="Per job: [[ms, KiB/s, direction], …] once a second.")
    raw = models.TextField(blank=True, help_text="The last job's final fio JSON.")
    message = models.CharField(max_length=1000, blank=True)
    cancel_requested = models.BooleanField(default=False)
    operation = models.ForeignKey(Operation, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_by = models.ForeignKey("appliance.User", null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["host", "-created_at"], name="run_host_recent")]

    def __str__(self):
        return self.title

    def get_absolute_url(self):
        return reverse("benchmark-run", args=[self.pk])

    @property
    def is_active(self) -> bool:
        return self.status in RunStatus.active()

    @property
    def scratch(self) -> str:
        return f"{self.target}/tarnbench-{self.pk}"
