"""A task's run: both sides listed, planned by guid, the transfers made by tarn-send on the NAS that dials (followed
here until they end), the newest common snapshot held on both sides, the target pruned by the task's rules; and
what the run checks of the receiving NAS afterwards (nothing made outside the pair's root)."""

import time
from datetime import UTC, datetime, timedelta
from typing import NamedTuple

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from appliance.choices import RunStatus
from appliance.models import Operation
from appliance.operations import Tracker, operation_runner, operation_start
from hostlib import recv_helper, replication, systemd
from hostlib.errors import HostError
from hostlib.replication import Dataset, Version
from pools.services import Scope, inventory_refresh
from replication import planning
from replication.choices import PairStatus, RunOutcome, Transport
from replication.models import DatasetState, Pair, Task, TaskRun
from replication.services.pairs import REPLICATION, dialling, ends, receiver_upgrade

POLL_SECONDS = 1.0
ATTEMPTS = 3  # a cut or stalled transfer is resumed this many times in one run before the run fails
IDLE = 30  # seconds of silence before the receiving NAS ends a stream (then it can be resumed)
ALIVE = 10  # the sender's ssh probes every ALIVE s and gives up after three unanswered
RUN_SECONDS = 7 * 24 * 3600  # a run's Celery limit: a first full stream of many TiB takes days
UNIT_EVERY = 3  # polls between two looks at the unit itself (a tarn-send that died without a last word)
CLONES_LOOK = 100  # how many past its limit a prune looks at for clones (a restore beside the replica keeps one)
FOLLOW_SECONDS = 5.0  # a look at a transfer's progress waits this long for its end (and returns when it comes)
EXIT_SECONDS = 30.0  # how long tarn-send may take to exit after its last word (its unit is active till then)


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
        TaskRun.objects.create(task=task, operation=op)  # its status is the operation's, one at a time per task
    return op


@operation_runner("replication.run", lock=REPLICATION, queue="default")
def task_run(tracker: Tracker) -> None:
    run = TaskRun.objects.select_related("task__pair__source", "task__pair__target").get(operation=tracker.op)
    task, pair = run.task, run.task.pair
    src, dst = tracker.transport(pair.source), tracker.transport(pair.target)
    try:
        outcome, message = _execute(tracker, run, task, src, dst)
    except BaseException as exc:  # whatever ends it (a soft time limit too), the run says why; the operation fails
        said = "; ".join(exc.messages) if isinstance(exc, ValidationError) else str(exc) or type(exc).__name__
        _finish(run, "", said)
        raise
    _finish(run, outcome, message)
    if outcome == RunOutcome.STOPPED:
        raise ValidationError(message)  # the operation fails with the cause named; nothing was forced
    tracker.progress(100, message)


def _finish(run: TaskRun, outcome: str, message: str) -> None:
    """What the run found and its last word; its status is its operation's end, recorded next by the core."""
    run.outcome, run.message = outcome, message[:1000]
    TaskRun.objects.filter(pk=run.pk).update(outcome=outcome, message=run.message, sent=run.sent, expected=run.expected)


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
    runs = TaskRun.objects.filter(task=task).exclude(pk=run.pk).select_related("operation")
    last = runs.status_in(*RunStatus.ended()).first()
    if last is None or last.status != RunStatus.SUCCEEDED or last.outcome == RunOutcome.EMPTY:
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
        while plan.outcome == planning.RESUME and replication.receive_busy(dst, task.pair.pk, plan.target):
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
    target's resume token names what the sender no longer has. A token is the target's to write: what it resolves
    to on the source must be the plan's own dataset (replication.estimate_resume), or the run stops."""
    steps, expected = [], 0
    root = task.pair.root
    for plan in plans:
        if plan.outcome not in (planning.SEND, planning.RESUME):
            continue
        for step in plan.steps:
            try:
                if step.token:
                    estimate = replication.estimate_resume(src, step.token, plan.source)
                else:
                    estimate = replication.estimate(
                        src, step.snapshot, base=step.base, intermediates=step.intermediates
                    )
            except HostError as exc:
                if step.token and replication.cause_of(str(exc)).code == "stale-token":
                    raise StaleToken(plan.target, str(exc)) from None
                raise
            expected += estimate.total
            argv = replication.send_argv(
                step.snapshot, base=step.base, intermediates=step.intermediates, token=step.token
            )
            what = step.snapshot or estimate.token.get("toname", "(resumed)")
            steps.append({"send": argv, "dataset": plan.target[len(root) + 1 :], "snapshot": what})
    return steps, expected


def _ssh(task: Task) -> dict:
    pair = task.pair
    return {
        "address": pair.address,
        "port": pair.port,
        "user": "root" if pair.pulls else recv_helper.user_of(pair.pk),
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
            _exited(near, unit)
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
    """Send until every dataset is up to date (or stopped by its cause): (what the run found, message)."""
    tracker.progress(2, "Listing both sides")
    for t in ends(task.pair, src, dst):
        replication.install_helpers(t)
    if not task.pair.receiver_ready:
        receiver_upgrade(tracker, task.pair, dst)
    sent, stops = 0, []
    near = dialling(task.pair, src, dst)[0]
    pool = task.pair.root.split("/")[0]
    txg = _txg(tracker, task, dst, pool)  # what the receiving NAS makes from now on has a createtxg above it
    if systemd.service_state(near, replication.send_unit(task.pk))[0] == "active":
        tracker.log("following the transfer a stopped worker left running")  # its receive holds the token
        _transfer(tracker, run, task, near, [], 0)
        sent = run.sent
    source = _source(task, src)
    if not sent and _unchanged(task, run, source):
        return RunOutcome.NOTHING, f"Nothing new; {len(source)} dataset(s) up to date"
    failures, plans = 0, []
    try:
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
            _log_rate(tracker, attempt, progress)
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
    finally:
        _outside_root(tracker, task, dst, pool, txg)
    stopped = {p.target for p in stops}
    went = _protect(tracker, task, src, dst, prune=task.keep, stopped=stopped)
    run.snapshots = went
    TaskRun.objects.filter(pk=run.pk).update(snapshots=went)
    _refresh(task)
    if stops:
        return RunOutcome.STOPPED, "; ".join(p.says for p in stops)
    if not sent and not went and plans and all(p.outcome == planning.NOTHING_TO_SEND for p in plans):
        which = f"matching {task.pattern!r}" if task.pattern else "at all"
        return RunOutcome.EMPTY, (
            f"Nothing was sent: the task sends snapshots, and {task.source_dataset} has none {which}. Take one "
            "(Snapshots) or give the dataset a snapshot schedule; until one has gone, the data is not protected."
        )
    if not sent:
        return RunOutcome.NOTHING, f"Nothing new; {len(went)} dataset(s) up to date"
    return "", f"Sent {sent >> 20} MiB; {len(went)} dataset(s) up to date"


def _exited(near, unit: str) -> None:
    """Wait for tarn-send's unit to leave "active" after its last word: it writes "done" and then exits, and a unit
    still active when the next run (or the next pass) looks is taken for one a dead worker left running, whose
    progress would be followed and its bytes counted again."""
    deadline = time.monotonic() + EXIT_SECONDS
    while systemd.service_state(near, unit)[0] == "active" and time.monotonic() < deadline:
        time.sleep(0.2)


def _log_rate(tracker: Tracker, attempt: int, progress: dict) -> None:
    seconds = float(progress.get("updated", 0)) - float(progress.get("started", 0))
    if 0 < seconds < 1e7:
        rate = int(progress.get("total", 0)) / seconds
        tracker.log(
            f"attempt {attempt}: {progress.get('total', 0)} bytes in {seconds:.1f} s ({rate / 2**20:.2f} MiB/s)"
        )
    if progress.get("data"):
        tracker.log(f"attempt {attempt}: the data in the clear over {progress['data']}")


def _txg(tracker: Tracker, task: Task, dst, pool: str) -> int | None:
    try:
        return replication.pool_txg(dst, pool)
    except HostError as exc:
        tracker.log(f"{task.pair.target.name}: no look for datasets made outside the root this run: {exc}")
        return None


def _outside_root(tracker: Tracker, task: Task, dst, pool: str, txg: int | None) -> None:
    """Datasets the receiving NAS's pool gained during the run outside every paired root there (a stream that
    landed where it should not, or someone else's doing): named on the pair, and an alert, until an admin clears
    it. ZFS refuses such a write from the pair's user; this is the look that would see it if it did not."""
    if txg is None:
        return
    try:
        made = replication.made_since(dst, pool, txg)
    except HostError as exc:
        tracker.log(f"could not list {pool} on {task.pair.target.name} for datasets made outside the root: {exc}")
        return
    roots = set(Pair.objects.filter(target=task.pair.target).values_list("root", flat=True))
    outside = [name for name, _ in made if not any(name == r or name.startswith(r + "/") for r in roots)]
    if outside:
        said = (
            f"made on {task.pair.target.name} outside {task.pair.root} during run {tracker.op.pk}: {', '.join(outside)}"
        )
        tracker.log(f"ALERT: {said}")
        Pair.objects.filter(pk=task.pair.pk).update(intrusion=said[:1000])


def _refresh(task: Task) -> None:
    """What the run changed, read again on both sides (holds on the source; snapshots and holds on the target), so
    the pages show it now rather than at the next full read."""
    for host, tree in ((task.pair.source, task.source_dataset), (task.pair.target, task.target_dataset)):
        try:
            inventory_refresh(host=host, scope=Scope(trees=[tree]))
        except HostError:
            pass  # the next full read (every 5 minutes) has it


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
    snapshots per dataset by the task's rules (prune_dataset). The datasets' newest common snapshots."""
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
            last = next((v for v in received if state and str(v.guid) == state.guid), None)
            prunes.append((Dataset(to, target[to].type, target[to].guid, versions=received), held, last))
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
    for ours, held, last in prunes:
        prune_dataset(tracker, task, dst, ours, held, last)
    return went


def prune_dataset(tracker: Tracker, task: Task, dst, ours: Dataset, held: Version, last: Version | None) -> None:
    """The target's snapshots of one replica past the task's keep, by its rules: never the held one, never one
    younger than keep_hours (by its creation, which came with the stream when it was made, before any takeover of
    the source), at most prune_limit in a run; and none at all while pruning is held. A run that brought more than
    prune_limit new snapshots to a replica that already had history (last: the one replicated before) holds
    pruning until an admin resumes it: a source taken over can make snapshots to push the good ones out."""
    task.refresh_from_db(fields=["prune_held"])
    if task.prune_held:
        tracker.log(f"{ours.name}: pruning is held ({task.prune_held})")
        return
    new = [v for v in ours.versions if last is not None and v.createtxg > last.createtxg]
    if len(new) > task.prune_limit:
        why = (
            f"run {tracker.op.pk} brought {len(new)} new snapshots to {ours.name}, more than {task.prune_limit}: "
            "look at them before pruning resumes (a source taken over can make snapshots to push good ones out)"
        )
        Task.objects.filter(pk=task.pk).update(prune_held=why[:1000])
        tracker.log(f"ALERT: pruning held: {why}")
        return
    younger = int((timezone.now() - timedelta(hours=task.keep_hours)).timestamp())
    victims = planning.retention_victims(ours, task.pattern, task.keep, {held.name}, younger_than=younger)
    victims = victims[: task.prune_limit + CLONES_LOOK]
    cloned = replication.clones(dst, ours.name, victims)  # one of them with a clone and ZFS destroys none
    victims = [v for v in victims if v not in cloned][: task.prune_limit]
    if cloned:
        kept = "; ".join(f"@{short} (cloned as {', '.join(made)})" for short, made in cloned.items())
        tracker.log(f"{ours.name}: kept past {task.keep}: {kept}; each goes at a run after its clone is destroyed")
    if victims:
        replication.destroy_snapshots(dst, ours.name, victims)
        tracker.log(f"{ours.name}: pruned {', '.join('@' + v for v in victims)} (keeps {task.keep})")
