"""Tasks: what goes from a pair's source to its target, when, and how much history the target keeps; deleting one,
failing over to its replica, bringing a snapshot back; beat's minute that starts the tasks whose time came."""

import fnmatch
from datetime import timedelta

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from appliance.checks import checked, confirmed
from appliance.choices import Role
from appliance.models import Operation
from appliance.operations import Tracker, operation_runner, operation_start
from appliance.schedules import CronError, cron_due, cron_parse, interval_due
from hostlib import names, replication
from hostlib.errors import HostError
from pools import selectors as pools
from pools import services as pools_services
from pools.services import inventory_refresh
from replication.choices import KEEP_HOURS_MAX, KEEP_MAX, MIN_CRON_GAP, PairStatus, Transport
from replication.models import DatasetState, Pair, Task
from replication.services.pairs import REPLICATION
from replication.services.runs import task_run_start

CRON_CATCH_UP = 60  # minutes a cron time is still started after it passed (beat or a worker was away)
EVERY_MAX = 44640  # minutes: a month


def _flag(value, field: str) -> bool:
    if type(value) is not bool:
        raise ValidationError({field: "True or false."})
    return value


def _count(value, field: str, low: int, high: int, says: str) -> int:
    if type(value) is not int or not low <= value <= high:
        raise ValidationError({field: says})
    return value


def _prune_rules(keep: int, keep_hours: int, prune_limit: int | None) -> int:
    """The retention's numbers checked; the prune limit (None: half of keep, at least one)."""
    _count(keep, "keep", 0, KEEP_MAX, f"Snapshots to keep per dataset on the target, 0 to {KEEP_MAX} (0 keeps all).")
    _count(keep_hours, "keep_hours", 0, KEEP_HOURS_MAX, f"Hours, 0 to {KEEP_HOURS_MAX}.")
    if prune_limit is None:
        return max(keep // 2, 1)
    return _count(prune_limit, "prune_limit", 1, KEEP_MAX, f"Snapshots per dataset and run, 1 to {KEEP_MAX}.")


def task_save(
    *,
    pair: Pair,
    source_dataset: str,
    target_name: str,
    recursive: bool = False,
    excludes: list[str] | None = None,
    pattern: str = "",
    limit: int = 0,
    keep: int = 0,
    keep_hours: int = 24,
    prune_limit: int | None = None,
    every_minutes: int = 0,
    after_snapshots: bool = False,
    transport: str = Transport.SSH,
    cron: str = "",
) -> Task:
    """A new replication task, its rules checked against what Tarn last read of both hosts. Names are taken as
    typed (a space or a line break is refused by the name rules, never trimmed away)."""
    if pair.status != PairStatus.PAIRED:
        raise ValidationError({"pair": "The pair is not ready: pair the hosts first."})
    checked(lambda: names.dataset_name(source_dataset), "source_dataset")
    if not pools.dataset_exists(host=pair.source, name=source_dataset):
        raise ValidationError({"source_dataset": f"{pair.source.name} has no dataset {source_dataset}."})
    if pair.pulls and not _within(source_dataset, pair.send_root):
        raise ValidationError({"source_dataset": f"The pair may only pull {pair.send_root} and below."})
    target = f"{pair.root}/{target_name}"
    if not isinstance(target_name, str) or not target_name or "/" in target_name:
        raise ValidationError({"target_name": "One dataset name below the pair's root (no '/')"})
    checked(lambda: names.dataset_name(target), "target_name")
    if pair.source_id == pair.target_id and _nested(source_dataset, target):
        raise ValidationError({"target_name": f"{target} and {source_dataset} lie inside one another."})
    excludes = _excludes(pair, source_dataset, excludes)
    if not isinstance(pattern, str) or len(pattern) > 100 or any(c in pattern for c in "\n\r\t\0/@"):
        raise ValidationError({"pattern": "A snapshot name pattern (glob: * ? [abc]), one line, no / or @."})
    if pattern and not any(
        fnmatch.fnmatchcase(n, pattern) for n in pools.snapshot_names(host=pair.source, dataset=source_dataset)
    ):
        raise ValidationError({"pattern": f"No snapshot of {source_dataset} matches {pattern!r}."})
    _count(limit, "limit", 0, 1 << 50, "Bytes per second, 0 for no limit.")
    prune_limit = _prune_rules(keep, keep_hours, prune_limit)
    _flag(recursive, "recursive")
    _count(every_minutes, "every_minutes", 0, EVERY_MAX, "Minutes from 5 to 44640 (a month), or 0 for no clock.")
    if 0 < every_minutes < MIN_CRON_GAP:
        raise ValidationError({"every_minutes": "Minutes from 5 to 44640 (a month), or 0 for no clock."})
    _flag(after_snapshots, "after_snapshots")
    if cron:
        try:
            cron_parse(cron, min_gap=MIN_CRON_GAP)
        except CronError as exc:
            raise ValidationError({"cron": str(exc)}) from None
    if transport not in Transport.values:
        raise ValidationError({"transport": "ssh, or tcp (the data in the clear, on a trusted link)."})
    if transport == Transport.TCP and pair.pulls:
        raise ValidationError({"transport": "A pull pair's data goes through ssh."})
    try:
        with transaction.atomic():
            return Task.objects.create(
                pair=pair,
                source_dataset=source_dataset,
                target_name=target_name,
                recursive=recursive,
                excludes=excludes,
                pattern=pattern,
                limit=limit,
                keep=keep,
                keep_hours=keep_hours,
                prune_limit=prune_limit,
                every_minutes=every_minutes,
                after_snapshots=after_snapshots,
                transport=transport,
                cron=" ".join(cron.split()),
            )
    except IntegrityError:
        raise ValidationError({"target_name": f"Another task already sends to {target}."}) from None


def _excludes(pair: Pair, source_dataset: str, excludes) -> list[str]:
    """The children to leave out, as paths below the source, each of which exists there."""
    if not isinstance(excludes or [], list) or not all(isinstance(e, str) for e in excludes or []):
        raise ValidationError({"excludes": "A list of dataset paths below the source."})
    kept = []
    for exclude in (e.strip("/") for e in excludes or []):  # "/old/" is old: the path below the source
        checked(lambda e=exclude: names.dataset_name(f"{source_dataset}/{e}"), "excludes", prefix=f"{exclude!r}: ")
        if not pools.dataset_exists(host=pair.source, name=f"{source_dataset}/{exclude}"):
            raise ValidationError({"excludes": f"{source_dataset}/{exclude} does not exist."})
        kept.append(exclude)
    return kept


def task_retention_save(*, task: Task, keep: int, keep_hours: int, prune_limit: int) -> Task:
    """New retention numbers for a task (admin); the next run prunes by them."""
    prune_limit = _prune_rules(keep, keep_hours, prune_limit)
    Task.objects.filter(pk=task.pk).update(keep=keep, keep_hours=keep_hours, prune_limit=prune_limit)
    task.keep, task.keep_hours, task.prune_limit = keep, keep_hours, prune_limit
    return task


def task_pruning_resume(*, task: Task) -> None:
    """An admin has looked at the snapshots that held pruning (a burst a source taken over could have made): the
    next run prunes again."""
    Task.objects.filter(pk=task.pk).update(prune_held="")


def task_delete_start(*, task: Task, user, confirm: str = "") -> Operation:
    """Delete a task: its holds released on both sides, the row gone; the replica on the target stays as it is.
    Typed: the target dataset's name."""
    confirmed(confirm, task.target_dataset, f"Type the target's name ({task.target_dataset}) to delete the task.")
    return operation_start(
        kind="replication.task_delete",
        host=task.pair.source,
        user=user,
        subject=f"task-{task.pk}",
        params={"task": task.pk},
    )


@operation_runner("replication.task_delete", lock=REPLICATION)
def task_delete_run(tracker: Tracker) -> None:
    task = Task.objects.select_related("pair__source", "pair__target").get(pk=tracker.op.params["task"])
    src, dst = tracker.transport(task.pair.source), tracker.transport(task.pair.target)
    states = [state for state in DatasetState.objects.filter(task=task) if state.snapshot]
    replication.hold(src, [f"{state.source}@{state.snapshot}" for state in states], task.hold_tag, release=True)
    replication.hold(dst, [f"{state.target}@{state.snapshot}" for state in states], task.hold_tag, release=True)
    what = str(task)
    task.delete()
    tracker.progress(100, f"Deleted the task {what}; its holds are released, the replica stays")


def failover_start(*, task: Task, user, confirm: str = "") -> Operation:
    """Make the replica writable and mounted on the target (admin, the target's name typed): the task is switched
    off, since the replica will now change and the next run would stop on it."""
    if not (user and user.has_role(Role.ADMIN)):
        raise ValidationError({"confirm": "Failing over is an admin's decision."})
    confirmed(confirm, task.target_dataset, f"Type the replica's name ({task.target_dataset}) to make it writable.")
    return operation_start(  # on the source's lock for the task: never beside one of its runs
        kind="replication.failover",
        host=task.pair.source,
        user=user,
        subject=f"task-{task.pk}",
        params={"task": task.pk},
    )


@operation_runner("replication.failover", lock=REPLICATION)
def failover_run(tracker: Tracker) -> None:
    task = Task.objects.select_related("pair__target").get(pk=tracker.op.params["task"])
    Task.objects.filter(pk=task.pk).update(enabled=False)
    dst = tracker.transport(task.pair.target)
    replicas = replication.listing(dst, task.target_dataset, recursive=task.recursive)
    if not replicas:
        raise HostError(f"{task.target_dataset} does not exist on {task.pair.target.name}")
    replication.make_writable(dst, {name: dataset.type for name, dataset in replicas.items()})
    inventory_refresh(host=task.pair.target)
    tracker.progress(100, f"{task.target_dataset} is writable and mounted; the task is off")


RESTORE_HOW = ("clone", "back")


def restore_start(*, task: Task, user, snapshot: str, how: str, name: str) -> Operation:
    """Bring a replicated snapshot back (admin):
    - clone: a read-only clone of it beside the replica on the target, mounted, to look at, copy from or share;
    - back: sent back into a new dataset on the source, NAS to NAS, over a pair from the target to the source (a task
      of its own, started now; it lands read-only, and failing that task over makes it writable).
    Nothing that exists is changed."""
    if not (user and user.has_role(Role.ADMIN)):
        raise ValidationError({"how": "Restoring is an admin's decision."})
    if how not in RESTORE_HOW:
        raise ValidationError({"how": "clone (on the target) or back (to the source)."})
    dataset, _, snap = snapshot.partition("@")
    replica = dataset == task.target_dataset or (task.recursive and dataset.startswith(task.target_dataset + "/"))
    if not snap or not replica or snap not in pools.snapshot_names(host=task.pair.target, dataset=dataset):
        raise ValidationError({"snapshot": f"{snapshot} is not a snapshot of this task's replica (as last read)."})
    if how == "clone":
        try:
            return pools_services.snapshot_clone_start(
                host=task.pair.target, user=user, snapshot=snapshot, target=name, readonly=True
            )
        except ValidationError as exc:
            raise _renamed(exc, {"target": "name"}) from None
    pairs = Pair.objects.filter(source=task.pair.target, target=task.pair.source, status=PairStatus.PAIRED)
    back = next((p for p in pairs.order_by("pk") if not p.pulls or _within(dataset, p.send_root)), None)
    if back is None:
        raise ValidationError(
            {"how": f"Pair {task.pair.target.name} with {task.pair.source.name} first (the bytes go back NAS to NAS)."}
        )
    if pools.dataset_exists(host=back.target, name=f"{back.root}/{name}"):
        raise ValidationError({"name": f"{back.root}/{name} exists already on {back.target.name}: restore beside it."})
    with transaction.atomic():
        try:
            restore = task_save(pair=back, source_dataset=dataset, target_name=name, pattern=snap)
        except ValidationError as exc:
            raise _renamed(exc, {"target_name": "name", "source_dataset": "snapshot", "pattern": "snapshot"}) from None
        Task.objects.filter(pk=restore.pk).update(enabled=False)  # a one-off: never on a clock
        return task_run_start(task=restore, user=user)


def _renamed(exc: ValidationError, fields: dict) -> ValidationError:
    """A called service's field errors under this form's names."""
    if not hasattr(exc, "error_dict"):
        return exc
    return ValidationError({fields.get(k, k): v for k, v in exc.error_dict.items()})


def _within(dataset: str, root: str) -> bool:
    return dataset == root or dataset.startswith(root + "/")


def _nested(a: str, b: str) -> bool:
    return a == b or a.startswith(b + "/") or b.startswith(a + "/")


def tasks_run_due(now=None) -> int:
    """Beat, every minute: start each enabled task whose clock is up (every N minutes, or a cron time come, in the
    server's time zone), or (after_snapshots) whose source has a matching snapshot newer than the one last
    replicated (by the inventory: no command). A task still running waits for the next minute."""
    now = now or timezone.now()
    started = 0
    for task in Task.objects.filter(enabled=True, pair__status=PairStatus.PAIRED).select_related("pair__source"):
        clock = task.every_minutes and interval_due(task.last_run_at, timedelta(minutes=task.every_minutes), now)
        clock = clock or (task.cron and _cron_due(task, now))
        if not (clock or (task.after_snapshots and _newer_on_source(task))):
            continue
        try:
            task_run_start(task=task, user=None)
        except ValidationError:
            continue
        Task.objects.filter(pk=task.pk).update(last_run_at=now)
        started += 1
    return started


def _cron_due(task: Task, now) -> bool:
    try:
        cron = cron_parse(task.cron)
    except CronError:
        return False  # a line saved before the rules were kept: it never starts, and its page says why
    last = timezone.localtime(task.last_run_at) if task.last_run_at else None
    return cron_due(cron, last, timezone.localtime(now), catch_up=CRON_CATCH_UP)


def _newer_on_source(task: Task) -> bool:
    names_ = [n for n in pools.snapshot_names(host=task.pair.source, dataset=task.source_dataset)]
    wanted = [n for n in names_ if not task.pattern or fnmatch.fnmatchcase(n, task.pattern)]
    if not wanted:
        return False
    state = DatasetState.objects.filter(task=task, source=task.source_dataset).first()
    return state is None or state.snapshot != wanted[-1]
