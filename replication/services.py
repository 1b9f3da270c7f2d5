"""Writes for replication: pair two hosts, save a task, run it. Every change is an Operation; the bytes go NAS to
NAS, never through Tarn, which lists both sides, plans by guid, follows the progress and holds the last common
snapshot. tarn-send runs as a transient unit on the NAS that dials: for a push the source (into tarn-recv, the pair
key's forced command on the target), for a pull the target (from tarn-serve, the forced command on the source, into
tarn-recv run locally)."""

import fnmatch
import ipaddress
import re
import time
from datetime import UTC, datetime, timedelta
from typing import NamedTuple

from celery.schedules import ParseException, crontab_parser
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from appliance.choices import Role
from appliance.models import Operation
from appliance.operations import Tracker, operation_runner, operation_start
from hostlib import names, replication, systemd
from hostlib.errors import HostError
from hostlib.replication import Dataset, Version
from pools import selectors as pools
from pools import services as pools_services
from pools.services import inventory_refresh
from replication import planning
from replication.choices import Direction, PairStatus, RunStatus, Transport
from replication.models import DatasetState, Pair, Task, TaskRun

REPLICATION = "replication"
POLL_SECONDS = 1.0
ATTEMPTS = 3  # a cut or stalled transfer is resumed this many times in one run before the run fails
IDLE = 30  # seconds of silence before the receiving NAS ends a stream (then it can be resumed)
ALIVE = 10  # the sender's ssh probes every ALIVE s and gives up after three unanswered
RUN_SECONDS = 7 * 24 * 3600  # a run's Celery limit: a first full stream of many TiB takes days
UNIT_EVERY = 3  # polls between two looks at the unit itself (a tarn-send that died without a last word)
FOLLOW_SECONDS = 5.0  # a look at a transfer's progress waits this long for its end (and returns when it comes)


# --- pairs ----------------------------------------------------------------------------------------------------------
def pair_start(
    *,
    source,
    target,
    address: str,
    root: str,
    user,
    port: int = 22,
    direction: str = Direction.PUSH,
    send_root: str = "",
) -> Operation:
    """A pair row (status pairing) and the Operation that makes the key on the NAS that dials (push: the source,
    pull: the target) and allows it on the other."""
    if direction not in Direction.values:
        raise ValidationError({"direction": "push (the source dials) or pull (the target dials)."})
    try:
        address = str(ipaddress.ip_address(address))
    except ValueError:
        raise ValidationError({"address": f"{address!r} is not an IP address."}) from None
    try:
        names.dataset_name(root)
    except names.InvalidName as exc:
        raise ValidationError({"root": str(exc)}) from None
    if not target.has_zfs:
        raise ValidationError({"target": f"{target.name} has no ZFS (as last read)."})
    if not pools.dataset_exists(host=target, name=root):
        raise ValidationError({"root": f"{target.name} has no dataset {root}: create it first."})
    if direction == Direction.PULL:
        try:
            names.dataset_name(send_root)
        except names.InvalidName as exc:
            raise ValidationError({"send_root": f"A pull pair names what it may send: {exc}"}) from None
        if not pools.dataset_exists(host=source, name=send_root):
            raise ValidationError({"send_root": f"{source.name} has no dataset {send_root}."})
    elif send_root:
        raise ValidationError({"send_root": "Only a pull pair names what it may send."})
    try:
        with transaction.atomic():
            pair = Pair.objects.create(
                source=source,
                target=target,
                address=address,
                port=port,
                root=root,
                direction=direction,
                send_root=send_root,
            )
    except IntegrityError:
        raise ValidationError({"root": f"{source.name} is already paired with {target.name} into {root}."}) from None
    return operation_start(
        kind="replication.pair", host=source, user=user, subject=f"pair-{pair.pk}", params={"pair": pair.pk}
    )


@operation_runner("replication.pair", lock=REPLICATION)
def pair_run(tracker: Tracker) -> None:
    pair = Pair.objects.select_related("source", "target").get(pk=tracker.op.params["pair"])
    src, dst = tracker.transport(pair.source), tracker.transport(pair.target)
    near, far = _dialling(pair, src, dst)
    helper, served = pair.forced
    try:
        tracker.progress(10, "Installing tarn-send, tarn-recv and tarn-serve")
        for t in _ends(pair, src, dst):
            replication.install_helpers(t)
        sender = replication.sender_address(near, pair.address)
        tracker.progress(40, f"Making the pair's key on {pair.dialler.name}")
        public = replication.pair_make_key(near, pair.pk)
        replication.pair_pin(near, pair.pk, pair.address, pair.port, replication.host_keys(far))
        tracker.progress(70, f"Allowing it on {pair.answerer.name}: only {helper} {served}, only from {sender}")
        line = replication.authorized_line(pair.pk, served, sender, public, serve=pair.pulls)
        replication.authorize(far, pair.pk, line)
        hello = replication.pair_check(near, pair.pk, pair.address, pair.port, helper=helper)
    except (HostError, ValueError) as exc:
        Pair.objects.filter(pk=pair.pk).update(status=PairStatus.FAILED, message=str(exc)[:1000])
        try:  # a half-made pair leaves no access behind
            replication.authorize(far, pair.pk, None)
        except HostError:
            pass
        raise HostError(f"Pairing failed: {exc}") from None
    Pair.objects.filter(pk=pair.pk).update(
        status=PairStatus.PAIRED, sender_address=sender, public_key=public, message=hello
    )
    how = f"{pair.target.name} pulls from {pair.source.name}" if pair.pulls else f"{pair.source.name} sends"
    tracker.progress(100, f"Paired: {how} to {pair.target.name}:{pair.root} ({hello})")


def _ends(pair: Pair, src, dst) -> list:
    """Both hosts' transports, or one when a host replicates to itself."""
    return [src] if pair.source_id == pair.target_id else [src, dst]


def _dialling(pair: Pair, src, dst) -> tuple:
    """(the dialler's transport, the answerer's), from the source's and the target's."""
    return (dst, src) if pair.pulls else (src, dst)


def unpair_start(*, pair: Pair, user) -> Operation:
    if pair.tasks.exists():
        raise ValidationError({"pair": "Delete the pair's replication tasks first."})
    with transaction.atomic():
        op = operation_start(
            kind="replication.unpair", host=pair.source, user=user, subject=f"pair-{pair.pk}", params={"pair": pair.pk}
        )
        Pair.objects.filter(pk=pair.pk).update(status=PairStatus.UNPAIRING)
    return op


@operation_runner("replication.unpair", lock=REPLICATION)
def unpair_run(tracker: Tracker) -> None:
    pair = Pair.objects.select_related("source", "target").get(pk=tracker.op.params["pair"])
    near, far = _dialling(pair, tracker.transport(pair.source), tracker.transport(pair.target))
    try:
        replication.authorize(far, pair.pk, None)
        replication.pair_unmake_key(near, pair.pk)
    except HostError as exc:  # the pair stays as it was, saying why; unpairing can be tried again
        Pair.objects.filter(pk=pair.pk).update(status=PairStatus.PAIRED, message=f"Unpairing failed: {exc}"[:1000])
        raise
    pair.delete()
    tracker.progress(100, f"Unpaired: {pair.answerer.name} no longer accepts the key")


# --- tasks ----------------------------------------------------------------------------------------------------------
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
    every_minutes: int = 0,
    after_snapshots: bool = False,
    transport: str = Transport.SSH,
    cron: str = "",
) -> Task:
    """A new replication task, its rules checked against what Tarn last read of both hosts."""
    if pair.status != PairStatus.PAIRED:
        raise ValidationError({"pair": "The pair is not ready: pair the hosts first."})
    try:
        names.dataset_name(source_dataset)
    except names.InvalidName as exc:
        raise ValidationError({"source_dataset": str(exc)}) from None
    if not pools.dataset_exists(host=pair.source, name=source_dataset):
        raise ValidationError({"source_dataset": f"{pair.source.name} has no dataset {source_dataset}."})
    if pair.pulls and not _within(source_dataset, pair.send_root):
        raise ValidationError({"source_dataset": f"The pair may only pull {pair.send_root} and below."})
    target = f"{pair.root}/{target_name}"
    try:
        if not target_name or "/" in target_name:
            raise names.InvalidName("One dataset name below the pair's root (no '/')")
        names.dataset_name(target)
    except names.InvalidName as exc:
        raise ValidationError({"target_name": str(exc)}) from None
    if pair.source_id == pair.target_id and _nested(source_dataset, target):
        raise ValidationError({"target_name": f"{target} and {source_dataset} lie inside one another."})
    if not isinstance(excludes or [], list) or not all(isinstance(e, str) for e in excludes or []):
        raise ValidationError({"excludes": "A list of dataset paths below the source."})
    excludes = [e.strip("/") for e in excludes or [] if e.strip("/")]
    for exclude in excludes:
        if not pools.dataset_exists(host=pair.source, name=f"{source_dataset}/{exclude}"):
            raise ValidationError({"excludes": f"{source_dataset}/{exclude} does not exist."})
    if pattern and not any(
        fnmatch.fnmatchcase(n, pattern) for n in pools.snapshot_names(host=pair.source, dataset=source_dataset)
    ):
        raise ValidationError({"pattern": f"No snapshot of {source_dataset} matches {pattern!r}."})
    if type(limit) is not int or limit < 0:
        raise ValidationError({"limit": "Bytes per second, 0 for no limit."})
    if type(keep) is not int or keep < 0:
        raise ValidationError({"keep": "Snapshots to keep per dataset on the target, 0 to keep all."})
    if type(recursive) is not bool:
        raise ValidationError({"recursive": "True or false."})
    if type(every_minutes) is not int or not (every_minutes == 0 or 5 <= every_minutes <= 44640):
        raise ValidationError({"every_minutes": "Minutes from 5 to 44640 (a month), or 0 for no clock."})
    if type(after_snapshots) is not bool:
        raise ValidationError({"after_snapshots": "True or false."})
    if not isinstance(cron, str):
        raise ValidationError({"cron": "A cron line, e.g. 0 2 * * * (02:00 daily)."})
    cron = " ".join(cron.split())
    if cron:
        try:
            cron_sets(cron)
        except ValueError as exc:
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
                every_minutes=every_minutes,
                after_snapshots=after_snapshots,
                transport=transport,
                cron=cron,
            )
    except IntegrityError:
        raise ValidationError({"target_name": f"Another task already sends to {target}."}) from None


def task_delete_start(*, task: Task, user, confirm: str = "") -> Operation:
    """Delete a task: its holds released on both sides, the row gone; the replica on the target stays as it is.
    Typed: the target dataset's name."""
    if confirm != task.target_dataset:
        raise ValidationError({"confirm": f"Type the target's name ({task.target_dataset}) to delete the task."})
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
    if confirm != task.target_dataset:
        raise ValidationError({"confirm": f"Type the replica's name ({task.target_dataset}) to make it writable."})
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
    replicas = list(replication.listing(dst, task.target_dataset, recursive=task.recursive))
    if not replicas:
        raise HostError(f"{task.target_dataset} does not exist on {task.pair.target.name}")
    replication.make_writable(dst, replicas)
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


def task_run_start(*, task: Task, user) -> Operation:
    """Run a task now: its TaskRun row with the Operation, one at a time per task."""
    if task.pair.status != PairStatus.PAIRED:
        raise ValidationError({"task": "The task's pair is not paired."})
    with transaction.atomic():
        op = operation_start(
            kind="replication.run",
            host=task.pair.source,
            user=user,
            subject=f"task-{task.pk}",
            params={"task": task.pk},
            seconds=RUN_SECONDS,
        )
        # One run per task at a time (the operation's lock): a run still "running" here lost its worker.
        TaskRun.objects.filter(task=task, status=RunStatus.RUNNING).update(
            status=RunStatus.FAILED,
            message="Its worker stopped; this run goes on from where it was.",
            finished_at=timezone.now(),
        )
        TaskRun.objects.create(task=task, operation=op)
    return op


CRON_FIELD = re.compile(r"[0-9*/,-]{1,60}")  # ASCII digits only: celery's parser reads "３" as 3
CRON_FIELDS = (("minute", 60, 0), ("hour", 24, 0), ("day of month", 31, 1), ("month", 12, 1), ("day of week", 7, 0))
CRON_CATCH_UP = 60  # minutes a cron time is still started after it passed (beat or a worker was away)


def cron_sets(cron: str) -> list[set[int]]:
    """A cron line's five fields (minute hour day-of-month month day-of-week; day of week 0-6, Sunday 0), each as
    the set of values it matches; ValueError naming the field."""
    fields = cron.split()
    if len(fields) != 5:
        raise ValueError("Five fields: minute hour day-of-month month day-of-week, e.g. 0 2 * * * (02:00 daily).")
    sets = []
    for text, (name, size, first) in zip(fields, CRON_FIELDS, strict=True):
        if not CRON_FIELD.fullmatch(text):
            raise ValueError(f"The {name}: digits 0-9, * , ranges (1-5), steps (*/15) and lists (0,30) only.")
        try:
            sets.append(crontab_parser(size, first).parse(text))
        except (ParseException, ValueError) as exc:
            raise ValueError(f"The {name}: {exc}") from None
    return sets


def cron_due(cron: str, last_run_at, now) -> bool:
    """Whether a time the cron line names has come since the task last started (looking back CRON_CATCH_UP
    minutes at most: a run missed for longer waits for the next time), in the server's time zone."""
    minute, hour, day, month, weekday = cron_sets(cron)
    at = timezone.localtime(now).replace(second=0, microsecond=0)
    for _ in range(CRON_CATCH_UP):
        if last_run_at is not None and at <= last_run_at:
            return False
        if at.minute in minute and at.hour in hour and at.day in day and at.month in month:
            if at.isoweekday() % 7 in weekday:
                return True
        at -= timedelta(minutes=1)
    return False


def tasks_run_due(now=None) -> int:
    """Beat, every minute: start each enabled task whose clock is up (every N minutes, or a cron time come), or
    (after_snapshots) whose source has a matching snapshot newer than the one last replicated (by the inventory:
    no command). A task still running waits for the next minute."""
    now = now or timezone.now()
    started = 0
    for task in Task.objects.filter(enabled=True, pair__status=PairStatus.PAIRED).select_related("pair__source"):
        clock = task.every_minutes and (
            task.last_run_at is None or (now - task.last_run_at).total_seconds() >= task.every_minutes * 60
        )
        clock = clock or (task.cron and cron_due(task.cron, task.last_run_at, now))
        if not (clock or (task.after_snapshots and _newer_on_source(task))):
            continue
        try:
            task_run_start(task=task, user=None)
        except ValidationError:
            continue
        Task.objects.filter(pk=task.pk).update(last_run_at=now)
        started += 1
    return started


def _newer_on_source(task: Task) -> bool:
    names_ = [n for n in pools.snapshot_names(host=task.pair.source, dataset=task.source_dataset)]
    wanted = [n for n in names_ if not task.pattern or fnmatch.fnmatchcase(n, task.pattern)]
    if not wanted:
        return False
    state = DatasetState.objects.filter(task=task, source=task.source_dataset).first()
    return state is None or state.snapshot != wanted[-1]


# --- a run ----------------------------------------------------------------------------------------------------------
@operation_runner("replication.run", lock=REPLICATION, queue="default")
def task_run(tracker: Tracker) -> None:
    run = TaskRun.objects.select_related("task__pair__source", "task__pair__target").get(operation=tracker.op)
    task, pair = run.task, run.task.pair
    src, dst = tracker.transport(pair.source), tracker.transport(pair.target)
    try:
        status, message = _execute(tracker, run, task, src, dst)
    except BaseException as exc:  # whatever ends it (a soft time limit too), the run says so, never "running"
        said = "; ".join(exc.messages) if isinstance(exc, ValidationError) else str(exc) or type(exc).__name__
        _finish(run, RunStatus.FAILED, said)
        raise
    _finish(run, status, message)
    if status == RunStatus.STOPPED:
        raise ValidationError(message)  # the operation fails with the cause named; nothing was forced
    tracker.progress(100, message)


def _finish(run: TaskRun, status: str, message: str) -> None:
    run.status, run.message, run.finished_at = status, message[:1000], timezone.now()
    TaskRun.objects.filter(pk=run.pk).update(
        status=status, message=run.message, finished_at=run.finished_at, sent=run.sent, expected=run.expected
    )


def _source(task: Task, src) -> dict:
    """The source side's listing, its excluded datasets left out."""
    source = replication.listing(src, task.source_dataset, recursive=task.recursive)
    if task.source_dataset not in source:
        raise HostError(f"{task.source_dataset} does not exist on {task.pair.source.name}")
    return {name: dataset for name, dataset in source.items() if not _excluded(task, name)}


def _excluded(task: Task, name: str) -> bool:
    below = name[len(task.source_dataset) :]
    return any(below == f"/{e}" or below.startswith(f"/{e}/") for e in task.excludes)


def _unchanged(task: Task, run: TaskRun, source: dict) -> bool:
    """Nothing new, told from the source's listing and Tarn's record alone: the task's last run ended well, the same
    datasets are there, and each one's newest matching snapshot is the one last replicated (by guid). The target
    is then not listed at all (a receiving NAS opens every unmounted replica to list it: 12-20 s for 100 of them on
    the emulated lab). A target changed by hand meanwhile is found by the next run that sends."""
    last = TaskRun.objects.filter(task=task).exclude(pk=run.pk).exclude(status=RunStatus.RUNNING).first()
    if last is None or last.status not in (RunStatus.SUCCEEDED, RunStatus.NOTHING):
        return False
    states = dict(DatasetState.objects.filter(task=task).values_list("source", "guid"))
    if set(source) != set(states):
        return False
    for name, dataset in source.items():
        wanted = planning.matching(dataset.versions, task.pattern)
        if not wanted or str(wanted[-1].guid) != states[name]:
            return False
    return True


def _plans(task: Task, src, dst, source: dict | None = None) -> list[planning.DatasetPlan]:
    """One listing per side (the source's unless given), then a plan per source dataset (excluded ones left out)."""
    source = source if source is not None else _source(task, src)
    target = replication.listing(dst, task.target_dataset, recursive=task.recursive)
    plans = []
    for name, dataset in source.items():
        to = task.target_dataset + name[len(task.source_dataset) :]
        plans.append(planning.plan_dataset(dataset, target.get(to), to, pattern=task.pattern))
    return planning.parents_first(plans, set(target))


def _quiet(task: Task, dst, plans) -> bool:
    """Wait for receives still draining into the task's targets (a cut transfer's) to end; True if any ran (then the
    targets' tokens moved: list again)."""
    waited, deadline = False, time.monotonic() + IDLE + 30
    for plan in plans:
        while plan.outcome == planning.RESUME and replication.receive_busy(dst, plan.target):
            if time.monotonic() > deadline:
                raise HostError(f"a receive into {plan.target} is still running on {task.pair.target.name}")
            waited = True
            time.sleep(POLL_SECONDS)
    return waited


class StaleToken(HostError):
    def __init__(self, target: str, words: str):
        super().__init__(words)
        self.target = target


def _spec_steps(task: Task, src, plans) -> tuple[list[dict], int]:
    """tarn-send's steps for every plan that sends, and their expected bytes (`zfs send -nvP`); StaleToken when a
    target's resume token names what the sender no longer has."""
    steps, expected = [], 0
    root = task.pair.root
    for plan in plans:
        if plan.outcome not in (planning.SEND, planning.RESUME):
            continue
        for step in plan.steps:
            try:
                estimate = replication.estimate(
                    src, step.snapshot, base=step.base, intermediates=step.intermediates, token=step.token
                )
            except HostError as exc:
                if step.token and replication.cause_of(str(exc)).code == "stale-token":
                    raise StaleToken(plan.target, str(exc)) from None
                raise
            expected += estimate.total
            argv = replication.send_argv(
                step.snapshot, base=step.base, intermediates=step.intermediates, token=step.token
            )
            first = step.first or (bool(step.token) and "fromguid" not in estimate.token)  # a full stream's token
            what = step.snapshot or estimate.token.get("toname", "(resumed)")
            steps.append({"send": argv, "dataset": plan.target[len(root) + 1 :], "first": first, "snapshot": what})
    return steps, expected


def _ssh(task: Task) -> dict:
    pair = task.pair
    return {
        "address": pair.address,
        "port": pair.port,
        "identity": replication.pair_key(pair.pk),
        "known_hosts": replication.known_hosts(pair.pk),
        "cipher": replication.CIPHER,
        "alive": ALIVE,
        "idle": IDLE,
        "tcp": task.transport == Transport.TCP,
    }


def _transfer(tracker: Tracker, run: TaskRun, task: Task, near, steps: list[dict], done_before: int) -> dict:
    """Start tarn-send on the NAS that dials, near (or follow the one a dead worker left running) until it ends or
    stalls; its last progress."""
    unit = replication.send_unit(task.pk)
    if systemd.service_state(near, unit)[0] != "active":
        pull = {"pair": task.pair.pk, "root": task.pair.root} if task.pair.pulls else None
        replication.send_start(near, task.pk, steps, _ssh(task), limit=task.limit, pull=pull)
    last, moved_at, polls = -1, time.monotonic(), 0
    while True:
        # each look is one command on the sending NAS (whose CPU the transfer needs) that returns when the run ends,
        # or after FOLLOW_SECONDS with the progress so far
        progress = replication.send_progress(near, task.pk, wait=FOLLOW_SECONDS)
        polls += 1
        total = int(progress.get("total", 0))
        if total != last:
            last, moved_at = total, time.monotonic()
        run.sent = done_before + total
        TaskRun.objects.filter(pk=run.pk).update(sent=run.sent)
        rate = int(progress.get("rate", 0))
        left = max(run.expected - run.sent, 0)
        eta = f", {left // rate} s left" if rate else ""
        tracker.progress(
            int(95 * run.sent / run.expected) if run.expected else 0,
            f"{progress.get('snapshot', '…')}: {run.sent >> 20} of {run.expected >> 20} MiB, {rate >> 20} MiB/s{eta}",
        )
        if progress.get("state") in ("done", "failed"):
            return progress
        if time.monotonic() - moved_at > task.stall_seconds:
            systemd.stop(near, unit)
            return {**progress, "state": "failed", "stderr": {"send": replication.STALLED, "receive": ""}}
        if polls % UNIT_EVERY == 0 and systemd.service_state(near, unit)[0] != "active":
            final = replication.send_progress(near, task.pk)  # it may have ended between the two reads
            if final.get("state") in ("done", "failed"):
                return final
            return {**final, "state": "failed", "stderr": {"send": replication.VANISHED, "receive": ""}}


def _execute(tracker: Tracker, run: TaskRun, task: Task, src, dst) -> tuple[str, str]:
    """Send until every dataset is up to date (or stopped by its cause): (run status, message)."""
    tracker.progress(2, "Listing both sides")
    for t in _ends(task.pair, src, dst):
        replication.install_helpers(t)
    sent, stops = 0, []
    near = _dialling(task.pair, src, dst)[0]
    if systemd.service_state(near, replication.send_unit(task.pk))[0] == "active":
        tracker.log("following the transfer a stopped worker left running")  # its receive holds the token
        _transfer(tracker, run, task, near, [], 0)
        sent = run.sent
    source = _source(task, src)
    if not sent and _unchanged(task, run, source):
        return RunStatus.NOTHING, f"Nothing new; {len(source)} dataset(s) up to date"
    failures = 0
    for attempt in range(1, 2 * ATTEMPTS + 2):  # each failure, and each pass that resumed, plans again
        plans = _plans(task, src, dst, source if attempt == 1 else None)
        if _quiet(task, dst, plans):
            plans = _plans(task, src, dst)
        stops = [p for p in plans if p.outcome in planning.STOPS]
        for plan in plans:
            if plan.outcome == planning.RESUME:
                tracker.log(f"{plan.target}: {plan.says}")
        try:
            steps, run.expected = _spec_steps(task, src, plans)
        except StaleToken as stale:  # the sender cannot even estimate from it
            tracker.log(f"attempt {attempt}: the token of {stale.target} is of no use ({stale}); discarded")
            replication.receive_abort(dst, stale.target)
            continue
        run.expected += sent
        if not steps:
            break
        tracker.log(f"attempt {attempt}: {len(steps)} transfer(s), {run.expected - sent} bytes expected")
        progress = _transfer(tracker, run, task, near, steps, sent)
        sent = run.sent
        seconds = float(progress.get("updated", 0)) - float(progress.get("started", 0))
        if 0 < seconds < 1e7:
            rate = int(progress.get("total", 0)) / seconds
            tracker.log(
                f"attempt {attempt}: {progress.get('total', 0)} bytes in {seconds:.1f} s ({rate / 2**20:.2f} MiB/s)"
            )
        if progress.get("data"):
            tracker.log(f"attempt {attempt}: the data in the clear over {progress['data']}")
        if progress.get("state") == "done":
            if any(p.outcome == planning.RESUME for p in plans):
                continue  # the resumed streams are in: what comes after them is planned now
            break
        words = " ".join((progress.get("stderr") or {}).values())
        cause = replication.cause_of(words)
        tracker.log(f"attempt {attempt} failed ({cause.code}: {cause.says}): {words.strip()[-1500:]}")
        if cause.action == "abort-and-replan":
            failed = steps[min(int(progress.get("step", 0)), len(steps) - 1)]
            replication.receive_abort(dst, f"{task.pair.root}/{failed['dataset']}")
        elif cause.action not in ("resume", "retry"):
            raise HostError(f"{cause.says}: {words.strip()[-300:]}")
        failures += 1
        if failures == ATTEMPTS:
            raise HostError(f"Not done after {ATTEMPTS} attempts; the next run goes on from where this one stopped")
        time.sleep(min(2**failures, 30))
    else:
        raise HostError(f"Not done after {attempt} passes; the next run goes on from where this one stopped")
    stopped = {p.target for p in stops}
    went = _protect(tracker, task, src, dst, prune=task.keep, stopped=stopped)
    run.snapshots = went
    TaskRun.objects.filter(pk=run.pk).update(snapshots=went)
    if stops:
        return RunStatus.STOPPED, "; ".join(p.says for p in stops)
    if not sent:
        return RunStatus.NOTHING, f"Nothing new; {len(went)} dataset(s) up to date"
    return RunStatus.SUCCEEDED, f"Sent {sent >> 20} MiB; {len(went)} dataset(s) up to date"


class _Moved(NamedTuple):
    """A dataset whose newest common snapshot is new since the last run: its hold moves there."""

    source: str  # the source dataset
    target: str  # its replica
    newest: Version  # the newest common snapshot, on the source
    there: str  # the same snapshot (by guid) on the target, in full
    before: str  # the snapshot held before, to release ("" if none)


def _protect(tracker: Tracker, task: Task, src, dst, *, prune: int = 0, stopped: frozenset | set = frozenset()) -> list:
    """Hold the newest common snapshot of each dataset on both sides (no retention job or person can then break the
    chain), release the one held before, and record it; with prune, the target then keeps that many of the task's
    snapshots per dataset (those up to the held one, which came from the source: never one made there since, never
    the held one, never in a dataset whose run stopped). The datasets' newest common snapshots."""
    source = replication.listing(src, task.source_dataset, recursive=task.recursive)
    target = replication.listing(dst, task.target_dataset, recursive=task.recursive)
    now, went, moved, prunes = timezone.now(), [], [], []
    states = {state.source: state for state in DatasetState.objects.filter(task=task)}
    for name, dataset in source.items():
        to = task.target_dataset + name[len(task.source_dataset) :]
        if to not in target or _excluded(task, name):
            continue
        on_target = {v.guid: v for v in target[to].snapshots()}
        common = [v for v in dataset.snapshots() if v.guid in on_target]
        if not common:
            continue
        newest, state = common[-1], states.get(name)
        if state is None or state.guid != str(newest.guid):
            before = state.snapshot if state and state.snapshot != newest.name else ""
            moved.append(_Moved(name, to, newest, on_target[newest.guid].full, before))
        went.append(f"{to}@{newest.name}")
        if prune and to not in stopped:
            held = on_target[newest.guid]  # what came before it came from the source (else the chain had broken)
            received = [v for v in target[to].snapshots() if v.createtxg <= held.createtxg]
            prunes.append((Dataset(to, target[to].type, target[to].guid, versions=received), held.name))
    # the new holds first, then the old ones released (never a moment with neither), each one command per side for
    # all of the run's datasets
    replication.hold(src, [m.newest.full for m in moved], task.hold_tag)
    replication.hold(dst, [m.there for m in moved], task.hold_tag)
    replication.hold(src, [f"{m.source}@{m.before}" for m in moved if m.before], task.hold_tag, release=True)
    replication.hold(dst, [f"{m.target}@{m.before}" for m in moved if m.before], task.hold_tag, release=True)
    for m in moved:
        DatasetState.objects.update_or_create(
            task=task,
            source=m.source,
            defaults={
                "target": m.target,
                "snapshot": m.newest.name,
                "guid": str(m.newest.guid),
                "snapshot_created_at": datetime.fromtimestamp(m.newest.created, UTC) if m.newest.created else None,
                "replicated_at": now,
            },
        )
    if moved:
        tracker.log(f"held on both sides: {', '.join(m.there for m in moved)}")
    for ours, held in prunes:
        victims = planning.retention_victims(ours, task.pattern, prune, {held})
        if victims:
            replication.destroy_snapshots(dst, ours.name, victims)
            tracker.log(f"{ours.name}: pruned {', '.join('@' + v for v in victims)} (keeps {prune})")
    return went
