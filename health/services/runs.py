"""Self-tests of many disks: a run tests every disk that can, group after group (one disk per vdev at a time), each
read moving it a step on; cancelling stops the group under way."""

from datetime import timedelta

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from appliance.choices import RunStatus
from appliance.models import Host, Operation
from appliance.operations import TargetBusy, Tracker, operation_runner, operation_start
from appliance.services import host_for_changes
from health.choices import SelfTestKind
from health.models import DiskHealth, SelfTestRun, SelfTestSchedule
from hostlib import smart
from hostlib.errors import HostError
from hostlib.runner import Transport
from pools import selectors as pools


def _host_for_changes(host: Host | None) -> Host:
    """A host Tarn may change (a self-test changes no data, but it is a command to the drive)."""
    return host_for_changes(host, refusal="no self-tests are started there")


def run_groups(*, host: Host, kind: str) -> list[list[str]]:
    """The devices to test, in groups: group i holds the i-th disk of every top-level vdev (a mirror or RAID-Z never
    has two members testing at once). Disks in no pool join the first group; a pool's disk whose vdev Tarn cannot
    place (a path it cannot map) gets a group of its own. Only disks that can run `kind`."""
    rows = {r.name: r for r in DiskHealth.objects.filter(host=host)}
    able = {n for n, r in rows.items() if kind in r.self_test_kinds}
    groups: list[list[str]] = []
    placed: set[str] = set()
    for vdev in pools.vdev_members(host=host):
        placed.update(vdev["disks"])
        for i, name in enumerate(n for n in vdev["disks"] if n in able):
            groups.extend([] for _ in range(i + 1 - len(groups)))
            groups[i].append(rows[name].device)
    in_pools = {d.name for d in pools.disk_list(host=host) if d.pool_id}
    free = [rows[n].device for n in sorted(able - placed - in_pools)]
    if free:
        groups[:1] = [(groups[0] if groups else []) + free]
    return groups + [[rows[n].device] for n in sorted((able & in_pools) - placed)]


def self_test_run_start(*, host: Host | None, user, kind: str, schedule: SelfTestSchedule | None = None) -> SelfTestRun:
    """Self-test every disk that can run `kind`, group after group; the read queued now starts the first."""
    host = _host_for_changes(host)
    if kind not in SelfTestKind.values:
        raise ValidationError({"kind": f"Choose one of: {', '.join(SelfTestKind.values)}."})
    if SelfTestRun.objects.filter(host=host, status=RunStatus.RUNNING).exists():
        raise ValidationError(f"Self-tests are already running on {host.name}: cancel them first.")
    groups = run_groups(host=host, kind=kind)
    if not groups:
        raise ValidationError({"kind": f"No disk of {host.name} can run a {kind} self-test (read their health?)."})
    try:
        with transaction.atomic():
            run = SelfTestRun.objects.create(host=host, kind=kind, groups=groups, schedule=schedule, user=user)
    except IntegrityError:  # another run started in between
        raise ValidationError(f"Self-tests are already running on {host.name}: cancel them first.") from None
    try:
        operation_start(kind="health.read", host=host, user=user)  # reads, then starts the first group
    except TargetBusy:
        pass  # a read is queued already: it starts them
    return run


def self_test_run_cancel(*, run: SelfTestRun, user) -> Operation:
    if run.status != RunStatus.RUNNING:
        raise ValidationError("These self-tests are no longer running.")
    return operation_start(kind="health.self_test_cancel", host=run.host, user=user, params={"run": run.pk})


@operation_runner("health.self_test_cancel", lock="health")
def self_test_cancel_run(tracker: Tracker) -> None:
    run = SelfTestRun.objects.get(pk=tracker.op.params["run"])
    t = tracker.transport()
    rows = {r.device: r for r in DiskHealth.objects.filter(host=run.host)}
    stopped = []
    if run.status == RunStatus.RUNNING and run.group_started_at and run.current < len(run.groups):
        for device in run.groups[run.current]:
            if device not in run.results and device in rows:
                smart.abort(t, device, rows[device].dtype)
                stopped.append(device)
    for group in run.groups:
        for device in group:
            run.results.setdefault(device, "cancelled")
    run.status, run.finished_at = RunStatus.CANCELLED, timezone.now()
    run.save()
    tracker.progress(100, f"Self-tests cancelled; aborted on {', '.join(stopped) or 'no disk'}")


GROUP_HOURS = {SelfTestKind.SHORT: 1, SelfTestKind.LONG: 48}  # a group with no result by then is given up


LOG_FULL = 20  # entries: an ATA log keeps 21, NVMe 20; a full log can take a new entry the same as its newest


def _newest(row: DiskHealth) -> list:
    t = row.self_tests[0] if row.self_tests else {}
    return [t.get("kind"), t.get("status"), t.get("hours"), len(row.self_tests)]


def _verdict(row: DiskHealth, before: list | None, *, kind: str, started_at) -> str | None:
    """The result of the test this run started, once the drive logged it: None while it has not (still testing, or
    no read has answered since). A full log whose newest entry reads as before (a test of the same kind within the
    same power-on hour: the drive's log moved on, but nothing it shows changed) counts once the drive is idle in a
    read the drive's own duration for that kind after the group started."""
    if row.testing is not None:
        return None
    if _newest(row) == before:
        minutes = row.self_test_minutes.get(kind)
        waited = row.answered_at - started_at >= timedelta(minutes=minutes or 0)
        same_kind = {"short": "short", "long": "extended"}[kind] in str(before[0]).lower()
        if not (minutes and waited and same_kind and len(row.self_tests) >= LOG_FULL):
            return None
    newest = row.self_tests[0] if row.self_tests else {}
    if newest.get("passed") is True:
        return "passed"
    return f"{'failed' if newest.get('passed') is False else 'no verdict'}: {newest.get('status', '')}"


def runs_advance(*, host: Host, transport: Transport, now=None) -> list[str]:
    """Each running run of host a step on: a group whose disks all logged their test's result (read after the
    group started) gets their verdicts, then the next group starts; a disk gone, or whose pool is scrubbing or
    resilvering now, is skipped, saying why; a group with no result within GROUP_HOURS is given up. Returns what
    it did, a line each."""
    now, said = now or timezone.now(), []
    for run in SelfTestRun.objects.filter(host=host, status=RunStatus.RUNNING):
        rows = {r.device: r for r in DiskHealth.objects.filter(host=host)}
        while run.current < len(run.groups):
            group = run.groups[run.current]
            if run.group_started_at is None:
                said += _group_start(run, group, rows, transport, now)
            late = now - run.group_started_at > timedelta(hours=GROUP_HOURS[run.kind])
            for device in group:
                row = rows.get(device)
                if device in run.results:
                    continue
                if row is None:
                    run.results[device] = "skipped: the disk is gone"
                elif row.answered_at and row.answered_at > run.group_started_at:
                    verdict = _verdict(row, run.baseline.get(device), kind=run.kind, started_at=run.group_started_at)
                    if verdict:
                        run.results[device] = verdict
                if device not in run.results and late:
                    run.results[device] = f"no verdict: no result within {GROUP_HOURS[run.kind]} h"
            if any(d not in run.results for d in group):
                break  # still testing: the next read looks again
            run.current, run.group_started_at = run.current + 1, None
        if run.current >= len(run.groups):
            run.status, run.finished_at = RunStatus.SUCCEEDED, now
            said.append(f"{run.get_kind_display()} self-tests done on {len(run.results)} disks")
        run.save()
    return said


def _group_start(run: SelfTestRun, group: list[str], rows: dict, t: Transport, now) -> list[str]:
    busy = {n: v["pool"] for v in pools.vdev_members(host=run.host) if v["busy"] for n in v["disks"]}
    said = []
    for device in group:
        row = rows.get(device)
        if row is None:
            run.results[device] = "skipped: the disk is gone"
        elif row.name in busy:
            run.results[device] = f"skipped: pool {busy[row.name]} is scrubbing or resilvering"
        else:
            run.baseline[device] = _newest(row)
            if row.testing is not None:
                continue  # already testing (started by hand): its result is taken as this run's
            try:
                started = smart.self_test(t, device, run.kind, row.dtype)
            except (HostError, smart.SmartError) as exc:
                run.results[device] = f"could not start: {str(exc)[:200]}"
                continue
            if started.refused:
                run.results[device] = f"could not start: {'; '.join(started.messages[-2:]) or 'smartctl refused'}"
            else:
                said.append(f"{run.kind} self-test started on {device}")
    run.group_started_at = now
    return said
