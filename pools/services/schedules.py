"""Schedules: periodic snapshot tasks (take and prune by retention) and scrub schedules, run by beat."""

from django.core.exceptions import ValidationError
from django.utils import timezone

from appliance.models import Operation
from hostlib import zfs
from pools.models import Pool, ScrubSchedule, SnapshotTask
from pools.selectors import retention_victims
from pools.services.commands import checked, command_start, require_pool
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
        kind="snapshot.task",
        target=f"snapshot-task:{task.pk}",
        argvs=argvs,
        done=f"Took {full}; pruned {len(argvs) - 1}",
        scope=Scope(trees=[task.dataset]) if task.recursive else Scope(datasets=[task.dataset]),
    )
    type(task).objects.filter(pk=task.pk).update(last_run_at=now)
    return op


def snapshot_task_save(*, host, form):
    task = form.save(commit=False)
    task.host = host
    task.save()
    return task


def snapshot_task_delete(*, host, pk: int) -> None:
    SnapshotTask.objects.filter(host=host, pk=pk).delete()


def scrub_schedule_save(*, host, pool: str, every_days: int | None) -> None:
    """every_days None or 0 removes the schedule."""
    require_pool(host, pool)
    if not every_days:
        ScrubSchedule.objects.filter(host=host, pool=pool).delete()
        return
    if not 1 <= every_days <= 365:
        raise ValidationError({"every_days": "From 1 to 365 days."})
    ScrubSchedule.objects.update_or_create(host=host, pool=pool, defaults={"every_days": every_days})


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
