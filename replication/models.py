"""Pairs of NAS hosts, replication tasks between them, each task's runs and what each dataset has on the target."""

from django.db import models
from django.db.models import Case, F, Q, When

from appliance.models import Host, Operation
from appliance.runs import OperationRun, RunQuerySet
from replication.choices import Direction, PairStatus, RunOutcome, Transport


class Pair(models.Model):
    """source sends to target over its own key, made on the NAS that dials (it never leaves it) and allowed on the
    other only from sender_address:
    - push: the source dials; on the target the key may only run tarn-recv into root;
    - pull: the target dials; on the source the key may only run tarn-serve, sending send_root or below (the
      source then holds nothing that can reach its copies)."""

    source = models.ForeignKey(Host, on_delete=models.PROTECT, related_name="replication_sends")
    target = models.ForeignKey(Host, on_delete=models.PROTECT, related_name="replication_receives")
    direction = models.CharField(max_length=4, choices=Direction.choices, default=Direction.PUSH)
    address = models.GenericIPAddressField(
        help_text="The address the dialling NAS reaches the other at (push: the target's; pull: the source's)."
    )
    port = models.PositiveIntegerField(default=22)
    sender_address = models.GenericIPAddressField(
        null=True, blank=True, help_text="The address the dialling NAS leaves from towards the other (read at pairing)."
    )
    root = models.CharField(max_length=255, help_text="The target dataset the pair may receive into (and below).")
    send_root = models.CharField(
        max_length=255, blank=True, help_text="Pull: the source dataset the pair may send (and below)."
    )
    public_key = models.TextField(blank=True)
    quota = models.PositiveBigIntegerField(
        default=0,
        help_text="Bytes: the most the root (the replicas and their snapshots) may hold on the target; set at pairing "
        "so a paired NAS cannot fill the target's pool. 0: none (pairs made before Tarn set one).",
    )
    receiver_ready = models.BooleanField(
        default=False,
        help_text="The target receives as the pair's own user (tarn-recv-<pair>), which ZFS allows into the root only; "
        "False for a pair made before that (set up at its next run).",
    )
    intrusion = models.CharField(
        max_length=1000,
        blank=True,
        help_text="Datasets a run found made on the target outside the pair's root while it received (empty: none); "
        "an admin clears it once reviewed.",
    )
    status = models.CharField(max_length=10, choices=PairStatus.choices, default=PairStatus.PAIRING)
    message = models.CharField(max_length=1000, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["source", "target", "root"], name="replication_pair_once_per_root")
        ]

    def __str__(self):
        pulled = " (pull)" if self.pulls else ""
        return f"{self.source.name} → {self.target.name}:{self.root}{pulled}"

    @property
    def pulls(self) -> bool:
        return self.direction == Direction.PULL

    @property
    def dialler(self) -> Host:
        """The NAS that holds the key, dials the other and runs tarn-send."""
        return self.target if self.pulls else self.source

    @property
    def answerer(self) -> Host:
        """The NAS whose authorized_keys allows the key, for its forced command only."""
        return self.source if self.pulls else self.target

    @property
    def forced(self) -> tuple[str, str]:
        """The answerer's forced command and the dataset it serves: tarn-serve sends send_root (and below),
        tarn-recv receives into root (and below)."""
        return ("tarn-serve", self.send_root) if self.pulls else ("tarn-recv", self.root)


class Task(models.Model):
    """What goes: source_dataset (and, recursive, its children but the excluded) to root/target_name on the target;
    which snapshots (a name pattern, empty for all); how fast; how many the target keeps."""

    pair = models.ForeignKey(Pair, on_delete=models.PROTECT, related_name="tasks")
    source_dataset = models.CharField(max_length=255)
    recursive = models.BooleanField(default=False)
    excludes = models.JSONField(default=list, blank=True)
    target_name = models.CharField(max_length=255, help_text="Below the pair's root.")
    pattern = models.CharField(max_length=100, blank=True, help_text="Snapshot names to send (glob); empty: all.")
    limit = models.PositiveBigIntegerField(default=0, help_text="Bytes per second; 0 for no limit.")
    keep = models.PositiveIntegerField(default=0, help_text="Snapshots the target keeps per dataset; 0 keeps all.")
    keep_hours = models.PositiveIntegerField(
        default=24,
        help_text="Whatever keep says, no snapshot younger than this many hours is pruned on the target: the history "
        "a source taken over cannot push out, however many snapshots it makes.",
    )
    prune_limit = models.PositiveIntegerField(
        default=1,
        help_text="A run prunes at most this many snapshots per dataset; one that brings more new snapshots than this "
        "to a dataset holds pruning (an alert) until an admin resumes it.",
    )
    prune_held = models.CharField(
        max_length=1000, blank=True, help_text="Why pruning is held (empty: it is not); an admin resumes it."
    )
    stall_seconds = models.PositiveIntegerField(default=300)
    transport = models.CharField(
        max_length=3,
        choices=Transport.choices,
        default=Transport.SSH,
        help_text="tcp: the stream in the clear on its own TCP connection (ssh still carries the request and the "
        "receive's words); for a trusted link where ssh's cipher costs more CPU than the link allows.",
    )
    every_minutes = models.PositiveIntegerField(default=0, help_text="Run every this many minutes; 0: not by clock.")
    cron = models.CharField(
        max_length=100,
        blank=True,
        help_text="Run at these times: minute hour day-of-month month day-of-week (cron), e.g. 0 2 * * * for 02:00 "
        "daily; the server's time zone.",
    )
    after_snapshots = models.BooleanField(
        default=False, help_text="Run once the source has a matching snapshot the target has not (a schedule's)."
    )
    enabled = models.BooleanField(default=True)
    last_run_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["pair", "target_name"], name="replication_task_target_once")]

    def __str__(self):
        return f"{self.source_dataset} → {self.target_dataset}"

    @property
    def target_dataset(self) -> str:
        return f"{self.pair.root}/{self.target_name}"

    @property
    def hold_tag(self) -> str:
        return f"tarn-repl-{self.pk}"


class TaskRun(OperationRun, models.Model):
    """One run of a task: what went, how much, what it found. Its Operation holds the log, the progress and the
    status (appliance.runs): a run whose worker died reads failed once the reaper fails its Operation."""

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="runs")
    operation = models.OneToOneField(Operation, on_delete=models.SET_NULL, null=True, related_name="replication_run")
    outcome = models.CharField(
        max_length=10,
        choices=RunOutcome.choices,
        blank=True,
        help_text="What the run found beyond its status: nothing new, no snapshot to send, stopped on a cause.",
    )
    expected = models.PositiveBigIntegerField(default=0)
    sent = models.PositiveBigIntegerField(default=0)
    snapshots = models.JSONField(default=list, blank=True)
    message = models.CharField(max_length=1000, blank=True)
    started_at = models.DateTimeField(auto_now_add=True)

    objects = RunQuerySet.as_manager()

    class Meta:
        ordering = ["-pk"]

    def __str__(self):
        return f"{self.task} run {self.pk}"

    @property
    def shown(self) -> str:
        """What its badge says: what it found, else its status."""
        return self.outcome or self.status

    @property
    def shown_label(self) -> str:
        return RunOutcome(self.outcome).label if self.outcome else self.get_status_display()

    @classmethod
    def shown_sql(cls):
        """The shown property as a database expression."""
        return Case(When(~Q(outcome=""), then=F("outcome")), default=cls.status_sql())


class DatasetState(models.Model):
    """Per source dataset of a task: its newest snapshot on the target (held on both sides), and since when."""

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="datasets")
    source = models.CharField(max_length=255)
    target = models.CharField(max_length=255)
    snapshot = models.CharField(max_length=255, blank=True)
    guid = models.CharField(max_length=20, blank=True)  # a uint64 as text (SQLite's integers are signed)
    snapshot_created_at = models.DateTimeField(null=True, blank=True)
    replicated_at = models.DateTimeField(null=True, blank=True)
    says = models.CharField(max_length=1000, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["task", "source"], name="replication_dataset_once")]

    def __str__(self):
        return f"{self.source} → {self.target}@{self.snapshot}"
