"""Reads for replication: pairs, tasks, their runs and what each dataset has on the target."""

from datetime import timedelta

from django.db.models import Case, F, Max, Min, OuterRef, Q, Subquery, When
from django.utils import timezone

from appliance.choices import OperationStatus, RunStatus
from appliance.fleet import BAD, OK, WARN, Cell
from appliance.schedules import CronError, cron_parse, interval_next
from pools import selectors as pools
from replication.choices import EMPTY_RUNS_ALERT, RunOutcome
from replication.models import DatasetState, Pair, Task, TaskRun


def pair_list():
    return Pair.objects.select_related("source", "target").order_by("pk")


def task_list():
    return Task.objects.select_related("pair__source", "pair__target").order_by("pk")


def task_runs(*, task, limit: int = 50):
    return TaskRun.objects.filter(task=task).select_related("operation")[:limit]


def dataset_states(*, task):
    return DatasetState.objects.filter(task=task).order_by("source")


def task_overview():
    """Tasks with their last run's status (or what it found) and end, the oldest of their datasets' last
    replication, and the creation of the oldest of their newest replicated snapshots (the lag: how old the data on
    the target is)."""
    last = TaskRun.objects.filter(task=OuterRef("pk")).order_by("-pk")
    return task_list().annotate(
        last_status=Subquery(last.annotate(shown=TaskRun.shown_sql()).values("shown")[:1]),
        last_finished=Subquery(last.values("operation__finished_at")[:1]),
        replicated_at=Min("datasets__replicated_at"),
        data_from=Min("datasets__snapshot_created_at"),
    )


def dashboard_replication(*, hosts) -> dict:
    """The dashboard's replication panel: the tasks sending from these hosts, their last run and lag (two queries)."""
    tasks = list(task_overview().filter(pair__source__in=hosts)[:20])
    return {"extra_panels": [("replication/_dashboard.html", {"tasks": tasks})]} if tasks else {}


def tasks_failing(*, source):
    """The source host's enabled tasks whose last finished run failed or stopped (with its message, or its
    operation's when the run has none: a worker that died)."""
    last = TaskRun.objects.filter(task=OuterRef("pk")).status_in(*RunStatus.ended()).order_by("-pk")
    said = Case(When(message="", then=F("operation__message")), default=F("message"))
    return (
        task_list()
        .filter(pair__source=source, enabled=True)
        .annotate(
            last_status=Subquery(last.annotate(s=TaskRun.status_sql()).values("s")[:1]),
            last_message=Subquery(last.annotate(said=said).values("said")[:1]),
        )
        .filter(last_status=RunStatus.FAILED)
    )


def tasks_behind(*, source, since):
    """The source host's enabled tasks made before `since` whose oldest dataset was last replicated before it (or
    never)."""
    return (
        task_list()
        .filter(pair__source=source, enabled=True, created_at__lt=since)
        .annotate(replicated_at=Min("datasets__replicated_at"))
        .filter(Q(replicated_at__lt=since) | Q(replicated_at__isnull=True))
    )


def replica_snapshots(*, task, limit: int = 200) -> list[str]:
    """The replica's snapshots on the target as last read (newest first): what a restore can bring back."""
    names = pools.snapshot_names(host=task.pair.target, dataset=task.target_dataset)
    return [f"{task.target_dataset}@{n}" for n in reversed(names)][:limit]


def task_next_run(*, task):
    """When the task's clock next starts it (server time): every N minutes or its cron line, whichever comes first;
    None when it is off or has no clock (after snapshots only, or a line that never fires)."""
    times = []
    if task.enabled and task.every_minutes:
        times.append(timezone.localtime(interval_next(task.last_run_at, timedelta(minutes=task.every_minutes))))
    if task.enabled and task.cron:
        try:
            times.append(cron_parse(task.cron).next_after(timezone.localtime()))
        except CronError:
            pass
    return min(times, default=None)


def tasks_empty(*, source, runs: int = EMPTY_RUNS_ALERT):
    """The source host's enabled tasks that have sent nothing ever and whose last `runs` runs found no snapshot."""
    tasks = []
    for task in task_list().filter(pair__source=source, enabled=True, datasets__isnull=True):
        ended = TaskRun.objects.filter(task=task).status_in(*RunStatus.ended())
        last = list(ended.values_list("outcome", flat=True)[:runs])
        if len(last) == runs and all(outcome == RunOutcome.EMPTY for outcome in last):
            tasks.append(task)
    return tasks


def tasks_pruning_held(*, source):
    return task_list().filter(pair__source=source).exclude(prune_held="")


def pairs_intruded(*, target):
    """Pairs into this host whose run found datasets made outside the pair's root."""
    return pair_list().filter(target=target).exclude(intrusion="")


LAG_WARN_HOURS = 26  # a daily task a little late


def fleet_replication(*, hosts) -> dict:
    """Per host that sends: how long since its tasks' last good run (the lag), and whether one's last run failed
    (two queries)."""
    now, cells = timezone.now(), {}
    last_good = dict(
        TaskRun.objects.filter(task__pair__source__in=hosts, operation__status=OperationStatus.SUCCEEDED)
        .values_list("task__pair__source_id")
        .annotate(at=Max("operation__finished_at"))
        .order_by()
    )
    latest = TaskRun.objects.filter(task=OuterRef("pk")).order_by("-pk").values("operation__status")[:1]
    failing: dict[int, int] = {}
    for source_id, status in (
        Task.objects.filter(pair__source__in=hosts)
        .annotate(last=Subquery(latest))
        .values_list("pair__source_id", "last")
    ):
        failing[source_id] = failing.get(source_id, 0) + (status == OperationStatus.FAILED)
    for source_id, failed in failing.items():
        at = last_good.get(source_id)
        hours = (now - at).total_seconds() / 3600 if at else float("inf")
        since = "never sent" if at is None else f"last sent {hours:.0f} h ago" if hours >= 1 else "sent within the hour"
        if failed:
            cells[source_id] = Cell(f"{failed} failing, {since}", -hours - 1e6 * failed, BAD, href="/replication/")
        else:
            cells[source_id] = Cell(since, -hours, WARN if hours > LAG_WARN_HOURS else OK, href="/replication/")
    return cells
