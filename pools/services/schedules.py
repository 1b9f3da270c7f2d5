"""Schedules: periodic snapshot tasks (take and prune by retention) and scrub schedules, run by beat."""

from django.core.exceptions import ValidationError
from django.utils import timezone

from appliance.checks import checked
from appliance.models import Operation
from hostlib import zfs
from pools.choices import DatasetType
from pools.models import Dataset, Pool, ScrubSchedule, SnapshotTask
from pools.selectors import retention_victims
from pools.services.commands import command_start, require_pool
from pools.services.inventory import Scope
from pools.services.pools import pool_scrub_start


def snapshot_tasks_run_due() -> int:
    """Beat, every minute: start each due task as an operation on its host's queue."""
    now = timezone.now()
    started = 0
    for task in SnapshotTask.objects.filter(enabled=True).select_related("host"):
        if task.is_due(now):
            try:
                snapshot_task_start(task=task, now=now)
                started += 1
            except ValidationError:
                pass  # its previous run is still going: next minute
    return started


def snapshot_task_start(*, task, now, user=None) -> Operation:
    """Take this round's snapshot and prune what the retention rules no longer keep, in one operation."""
    full = f"{task.dataset}@{task.snapshot_name(now)}"
    argvs = [checked(lambda: zfs.snapshot_argv([full], recursive=task.recursive))]
    argvs += [zfs.destroy_argv(s.full_name) for s in retention_victims(task=task, now=now, taking_one=True)]
    op = command_start(
        host=task.host,
        user=user,
        kind="pools.snapshot_task",
        target=f"snapshot-task:{task.pk}",
        argvs=argvs,
        done=f"Took {full}; pruned {len(argvs) - 1}",
        scope=Scope(trees=[task.dataset]) if task.recursive else Scope(datasets=[task.dataset]),
    )
    type(task).objects.filter(pk=task.pk).update(last_run_at=now)
    return op


SNAPSHOT_TASK_FIELDS = frozenset(
    {"dataset", "recursive", "every_minutes", "prefix", "keep_count", "keep_days", "exclude"}
)


def snapshot_task_save(*, host, data: dict, pk: int | None = None) -> SnapshotTask:
    """Create a snapshot schedule, or change the one with this pk (only the fields in data change).

    Every rule is here, for the page and the API alike; each refusal names its field."""
    unknown = set(data) - SNAPSHOT_TASK_FIELDS
    if unknown:
        raise TypeError(f"Not a snapshot schedule's field: {', '.join(sorted(unknown))}")
    task = SnapshotTask.objects.get(host=host, pk=pk) if pk else SnapshotTask(host=host)
    for key, value in data.items():
        setattr(task, key, value)
    _snapshot_task_check(task)
    task.save()
    return task


def _snapshot_task_check(task: SnapshotTask) -> None:
    errors = {}
    try:
        task.clean_fields(exclude=["host", "last_run_at"])
    except ValidationError as exc:
        errors = exc.message_dict
    if (
        "dataset" not in errors
        and not Dataset.objects.filter(host=task.host, name=task.dataset, type=DatasetType.FILESYSTEM).exists()
    ):
        errors["dataset"] = [f"No filesystem {task.dataset} on {task.host.name} (refresh the inventory?)."]
    if task.keep_count is None and task.keep_days is None:
        errors.setdefault("keep_count", []).append("Set a count, an age or both: snapshots kept forever fill the pool.")
    if "every_minutes" not in errors and task.every_minutes < 5:
        errors["every_minutes"] = ["At least every 5 minutes."]
    clash = SnapshotTask.objects.filter(host=task.host, dataset=task.dataset, prefix=task.prefix).exclude(pk=task.pk)
    if "prefix" not in errors and clash.exists():
        errors["prefix"] = [f"{task.dataset} already has a schedule with the prefix {task.prefix}."]
    if errors:
        raise ValidationError(errors)


def snapshot_task_delete(*, host, pk: int) -> None:
    SnapshotTask.objects.filter(host=host, pk=pk).delete()


def scrub_schedule_save(*, host, pool: str, every_days: int | None) -> ScrubSchedule | None:
    """Scrub the pool every so many days; every_days None or 0 removes the schedule (None returned)."""
    require_pool(host, pool)
    if not every_days:
        ScrubSchedule.objects.filter(host=host, pool=pool).delete()
        return None
    if not 1 <= every_days <= 365:
        raise ValidationError({"every_days": "From 1 to 365 days."})
    schedule, _ = ScrubSchedule.objects.update_or_create(host=host, pool=pool, defaults={"every_days": every_days})
    return schedule


def scrub_schedules_run_due() -> int:
    """Beat, hourly: start a scrub for each due schedule whose pool is present and not already scanning."""
    now, started = timezone.now(), 0
    for schedule in ScrubSchedule.objects.select_related("host"):
        pool = Pool.objects.filter(host=schedule.host, name=schedule.pool).first()
        if pool is None or not schedule.is_due(now) or pool.scan_state == "SCANNING":
            continue
        try:
            pool_scrub_start(host=schedule.host, user=None, pool=schedule.pool, action="start")
        except ValidationError:
            continue  # something else runs on the pool: next hour
        ScrubSchedule.objects.filter(pk=schedule.pk).update(last_run_at=now)
        started += 1
    return started
