"""Writes for disk health: a host's health pass (every disk read side by side, each with its own timeout, a
sleeping disk left asleep), self-tests started and stopped as operations, and pruning the temperature history."""

import re
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import datetime, timedelta

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from analytics.selectors import rules
from appliance.connect import transport_for
from appliance.models import Host, Operation
from appliance.operations import TargetBusy, Tracker, operation_runner, operation_start
from appliance.services import host_for_changes
from health.choices import (
    POLL_MINUTES,
    READ_PARALLEL,
    RUN_POLL_MINUTES,
    TEMPERATURE_DAYS,
    Every,
    HealthState,
    RunStatus,
    SelfTestKind,
)
from health.models import DiskHealth, HealthPass, SelfTestRun, SelfTestSchedule, TemperaturePoint
from hostlib import smart
from hostlib.errors import CommandTimeout, HostError, ToolMissing
from hostlib.runner import Transport
from pools import selectors as pools

UNSUPPORTED_AGAIN = timedelta(hours=24)  # a disk without SMART (virtio) is asked again after this, not every pass
COUNTERS = {f"attr{i}" for i in smart.WATCHED} | {"media_errors", "critical_warning"}


def judge_limits() -> dict:
    """The admin's levels for the state a read gives (the same numbers the alert rules use)."""
    active = rules()
    wear, hot = active.get("nvme_wear"), active.get("disk_hot")
    return {"wear_limit": int(wear[0].threshold if wear else 80), "hot": int(hot[0].threshold if hot else 60)}


def _inventory_name(device: str, names: set[str]) -> str:
    """smartctl's device → the inventory's disk name: /dev/sda → sda; /dev/nvme0 (the controller) → nvme0n1."""
    base = device.rsplit("/", 1)[-1]
    if re.fullmatch(r"nvme\d+", base):
        return next((n for n in sorted(names) if re.fullmatch(rf"{base}n\d+", n)), f"{base}n1")
    return base


def _counters(reading: smart.Reading) -> dict:
    found = {f"attr{a.id}": a.raw for a in reading.attributes if a.id in smart.WATCHED}
    for key in ("media_errors", "critical_warning"):
        if reading.nvme.get(key) is not None:
            found[key] = reading.nvme[key]
    return found


def _read_one(t: Transport, device: str, dtype: str) -> smart.Reading:
    """One disk: its reading, or one that says why it did not answer (a timeout, the host gone mid-read, a device
    or type smartctl must not be given): never an error that stops the pass."""
    started = time.monotonic()
    try:
        return smart.read(t, device, dtype)
    except CommandTimeout:
        return smart.Reading(device=device, messages=[f"no answer within {smart.READ_SECONDS} s"], flags=["open"])
    except ToolMissing:
        raise
    except smart.SmartError as exc:
        return smart.Reading(device=device, messages=[f"not read: {exc}"], flags=["usage"])
    except HostError as exc:
        took = time.monotonic() - started
        return smart.Reading(device=device, messages=[f"{str(exc)[:300]} (after {took:.0f} s)"], flags=["open"])


def _failed_pass(record: HealthPass, error: str, now, started: float) -> HealthPass:
    record.error, record.at, record.seconds = error[:500], now, time.monotonic() - started
    record.save()  # its time too: the host is asked again at its next turn, not every minute
    return record


def health_read(*, host: Host, now=None, transport: Transport | None = None) -> HealthPass:
    """Read every disk of host: those smartctl lists (--scan, which opens none; --scan-open only when one is new, to
    learn its type: after that no command reaches a disk before its power mode is asked) and the inventory's others
    (virtio, a bridge that hides SMART), READ_PARALLEL at a time, each with its own timeout, so one slow disk holds
    up no other."""
    now = now or timezone.now()
    started = time.monotonic()
    t = transport or transport_for(host, read_only=True)
    record, _ = HealthPass.objects.get_or_create(host=host)
    rows = {r.device: r for r in DiskHealth.objects.filter(host=host)}
    try:
        scanned = smart.scan(t)
        known = {d: r.dtype for d, r in rows.items() if r.dtype}
        if any(s.device not in known and s.type == "scsi" for s in scanned):  # a disk not seen before: its type
            opened = {s.device: s.type for s in smart.scan(t, open_=True) if not s.error}
            scanned = [replace(s, type=opened.get(s.device, s.type)) for s in scanned]
        scanned = [replace(s, type=known.get(s.device) or s.type) for s in scanned]
    except ToolMissing:
        return _failed_pass(record, "smartctl is not installed on this host (apt install smartmontools)", now, started)
    except smart.SmartError as exc:
        return _failed_pass(record, str(exc), now, started)
    except HostError as exc:
        return _failed_pass(record, f"could not list the disks: {str(exc)[:400]}", now, started)
    inventory = {d.name: d for d in pools.disk_list(host=host)}
    targets = {s.device: (s.type if not s.error else "") for s in scanned}
    found = {_inventory_name(d, set(inventory)) for d in targets}
    for name, disk in inventory.items():  # disks smartctl does not list: asked once a day whether they have SMART
        row = rows.get(disk.path)
        if name in found or (row and row.state == HealthState.UNSUPPORTED and row.read_at > now - UNSUPPORTED_AGAIN):
            continue
        targets.setdefault(disk.path, "")
    with ThreadPoolExecutor(max_workers=READ_PARALLEL) as pool:
        readings = list(pool.map(lambda item: _read_one(t, *item), targets.items()))
    limits = judge_limits()
    with transaction.atomic():
        for reading in readings:
            _store(host, rows.get(reading.device), reading, targets[reading.device], set(inventory), limits, now)
        gone = [d for d, r in rows.items() if d not in targets and _inventory_name(d, set()) not in inventory]
        DiskHealth.objects.filter(host=host, device__in=gone).delete()  # removed from the host: no longer watched
        record.at, record.error, record.disks = now, "", len(readings)
        record.seconds = time.monotonic() - started
        record.save()
    return record


NOT_ANSWERED = (HealthState.ASLEEP, HealthState.SILENT)


def _store(host, row, reading: smart.Reading, dtype: str, names: set[str], limits: dict, now) -> DiskHealth:
    """One reading into the disk's row. A read that did not answer (asleep, silent) says so in `power` and leaves
    the state and figures of the last one that did: a failing disk that spins down is still failing. Another drive
    at the same path (a new serial) starts a new row: no counters, history or temperatures carried over."""
    state, reasons = smart.judge(reading, **limits)
    if row is not None and reading.serial and row.serial and reading.serial != row.serial:
        row.delete()
        row = None
    row = row or DiskHealth(host=host, device=reading.device, state=state)
    row.name = _inventory_name(reading.device, names)
    row.dtype = dtype or row.dtype
    row.read_at = now
    row.exit_status, row.flags, row.messages = reading.exit_status, reading.flags, reading.messages[-5:]
    if state in NOT_ANSWERED:
        row.power, row.power_note = state, "; ".join(reasons)[:300]
        if row.answered_at is None:
            row.state, row.reasons = state, reasons  # nothing better known yet
        row.save()
        return row
    row.power, row.power_note, row.state, row.reasons = "", "", state, reasons
    if state == HealthState.UNSUPPORTED:
        row.save()
        return row
    counters = _counters(reading)
    row.rising = sorted(k for k, v in counters.items() if row.counters and v > row.counters.get(k, v))
    row.counters = counters
    for field in ("protocol", "model", "serial", "firmware", "capacity"):
        setattr(row, field, getattr(reading, field) or getattr(row, field))
    row.rotation, row.hours, row.temperature = reading.rotation, reading.hours, reading.temperature
    row.temp_warn, row.temp_crit, row.passed = reading.temp_warn, reading.temp_crit, reading.passed
    row.attributes = [vars(a) for a in reading.attributes]
    row.nvme, row.error_count, row.testing = reading.nvme, reading.error_count, reading.testing
    row.self_tests = [vars(s) for s in reading.self_tests[:25]]
    row.self_test_kinds, row.self_test_minutes = reading.self_test_kinds, reading.self_test_minutes
    row.answered_at = now
    row.save()
    if reading.temperature is not None:
        TemperaturePoint.objects.create(disk=row, at=now, celsius=reading.temperature)
    return row


def _host_for_changes(host: Host | None) -> Host:
    """A host Tarn may change (a self-test changes no data, but it is a command to the drive)."""
    return host_for_changes(host, refusal="no self-tests are started there")


def health_read_start(*, host: Host | None, user) -> Operation:
    if host is None:
        raise ValidationError({"host": "Add a host first (Hosts → Add host)."})
    return operation_start(kind="health.read", host=host, user=user)


@operation_runner("health.read", lock="health")
def health_read_run(tracker: Tracker) -> None:
    tracker.progress(10, "Reading every disk's SMART data")
    record = health_read(host=tracker.op.host, transport=tracker.transport(read_only=True))
    if record.error:
        raise ValidationError(record.error)
    if not tracker.op.host.read_only:  # self-tests started here are audited as this read's commands
        for line in runs_advance(host=tracker.op.host, transport=tracker.transport()):
            tracker.log(line)
    tracker.progress(100, f"{record.disks} disks read in {record.seconds:.1f} s")


def health_due(*, now=None) -> list[Host]:
    """The hosts whose disks were last read POLL_MINUTES ago or more (or never)."""
    now = now or timezone.now()
    last = dict(HealthPass.objects.values_list("host_id", "at"))
    testing = set(SelfTestRun.objects.filter(status=RunStatus.RUNNING).values_list("host_id", flat=True))

    def due(h) -> bool:
        minutes = RUN_POLL_MINUTES if h.pk in testing else POLL_MINUTES
        return not last.get(h.pk) or last[h.pk] <= now - timedelta(minutes=minutes)

    return [h for h in Host.objects.all() if h.has_zfs and due(h)]


def health_poll_due(*, now=None) -> int:
    """Queue a read of each host that is due (on its queue: TargetBusy when one is already waiting)."""
    schedules_run_due(now=now)
    started = 0
    for host in health_due(now=now):
        try:
            operation_start(kind="health.read", host=host, user=None)
            started += 1
        except TargetBusy:
            continue
    return started


def temperatures_prune(*, now=None) -> int:
    now = now or timezone.now()
    deleted, _ = TemperaturePoint.objects.filter(at__lt=now - timedelta(days=TEMPERATURE_DAYS)).delete()
    return deleted


# --- self-tests -------------------------------------------------------------------------------------------------
def self_test_start(*, host: Host | None, user, device: str, kind: str) -> Operation:
    """Start a short or long self-test on one disk: the drive runs it on its own; the health reads follow it."""
    host = _host_for_changes(host)
    row = DiskHealth.objects.filter(host=host, device=device).first()
    if row is None:
        raise ValidationError({"device": f"{host.name} has no disk {device} with SMART (read its health first)."})
    if kind not in SelfTestKind.values:
        raise ValidationError({"kind": f"Choose one of: {', '.join(SelfTestKind.values)}."})
    if kind not in row.self_test_kinds:
        raise ValidationError({"kind": f"{device} ({row.model or 'this drive'}) cannot run a {kind} self-test."})
    if row.testing is not None:
        raise ValidationError({"device": f"{device} is already running a self-test ({row.testing}% left)."})
    return operation_start(
        kind="health.self_test", host=host, user=user, subject=device, params={"device": device, "self_test": kind}
    )


def self_test_abort(*, host: Host | None, user, device: str) -> Operation:
    host = _host_for_changes(host)
    if not DiskHealth.objects.filter(host=host, device=device).exists():
        raise ValidationError({"device": f"{host.name} has no disk {device} with SMART."})
    return operation_start(
        kind="health.self_test_abort", host=host, user=user, subject=device, params={"device": device}
    )


@operation_runner("health.self_test", "health.self_test_abort", lock="disk")
def self_test_run(tracker: Tracker) -> None:
    op, params = tracker.op, tracker.op.params
    row = DiskHealth.objects.filter(host=op.host, device=params["device"]).first()
    if row is None:
        raise ValidationError({"device": f"{params['device']} is no longer on {op.host.name}."})
    t = tracker.transport()
    if op.kind == "health.self_test_abort":
        reading = smart.abort(t, row.device, row.dtype)
        done = f"Self-test on {row.device} aborted"
    else:
        tracker.progress(10, f"Starting a {params['self_test']} self-test on {row.device}")
        reading = smart.self_test(t, row.device, params["self_test"], row.dtype)
        done = f"{params['self_test'].capitalize()} self-test started on {row.device}: its progress shows on the disk's page"
    if reading.refused:
        raise ValidationError(f"smartctl on {row.device}: {'; '.join(reading.messages[-2:]) or 'it refused'}")
    _store(op.host, row, smart.read(t, row.device, row.dtype), row.dtype, {row.name}, judge_limits(), timezone.now())
    tracker.progress(100, done)


# --- many disks: runs and schedules -----------------------------------------------------------------------------
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
            run.status, run.finished_at = RunStatus.DONE, now
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


def schedule_slot(schedule: SelfTestSchedule, now) -> datetime:
    """The newest moment the schedule names at or before now (local time; the first of a doubled hour when the
    clocks go back, so one slot is one moment)."""
    local = timezone.localtime(now)
    slot = local.replace(minute=0, second=0, microsecond=0, hour=schedule.hour, fold=0)
    if schedule.every == Every.DAY:
        return slot if slot <= local else slot - timedelta(days=1)
    if schedule.every == Every.WEEK:
        slot -= timedelta(days=(local.weekday() - schedule.weekday) % 7)
        return slot if slot <= local else slot - timedelta(days=7)
    slot = slot.replace(day=schedule.day)
    if slot > local:  # last month's
        slot = (slot.replace(day=1) - timedelta(days=1)).replace(day=schedule.day)
    return slot


def slot_problems(*, every: str, hour: int, weekday: int, day: int) -> dict[str, str]:
    """What is wrong with a calendar slot (schedule_slot's fields), by field; shared by every dated schedule."""
    problems = {}
    if every not in Every.values:
        problems["every"] = f"Choose one of: {', '.join(Every.values)}."
    if not 0 <= hour <= 23:
        problems["hour"] = "An hour from 0 to 23."
    if not 1 <= day <= 28:
        problems["day"] = "A day from 1 to 28 (every month has it)."
    if not 0 <= weekday <= 6:
        problems["weekday"] = "0 (Monday) to 6 (Sunday)."
    return problems


def schedules_run_due(*, now=None) -> int:
    """Start the runs whose slot has come since they last started (and since the schedule was made); a host with
    a run under way waits for it. One schedule's trouble stops no other (nor the reads after)."""
    now, started = now or timezone.now(), 0
    for schedule in SelfTestSchedule.objects.filter(enabled=True).select_related("host"):
        slot = schedule_slot(schedule, now)
        if slot < schedule.created_at or (schedule.last_started_at and schedule.last_started_at >= slot):
            continue
        try:
            self_test_run_start(host=schedule.host, user=None, kind=schedule.kind, schedule=schedule)
        except ValidationError:
            continue  # a run under way (it waits), a read-only host, or no disk can run it this time
        schedule.last_started_at = now
        schedule.save(update_fields=["last_started_at"])
        started += 1
    return started


def schedule_save(*, host: Host | None, kind: str, every: str, weekday: int = 6, day: int = 1, hour: int = 2):
    host = _host_for_changes(host)
    problems = {}
    if kind not in SelfTestKind.values:
        problems["kind"] = f"Choose one of: {', '.join(SelfTestKind.values)}."
    problems.update(slot_problems(every=every, hour=hour, weekday=weekday, day=day))
    if problems:
        raise ValidationError(problems)
    return SelfTestSchedule.objects.create(host=host, kind=kind, every=every, weekday=weekday, day=day, hour=hour)


def schedule_delete(*, schedule: SelfTestSchedule) -> None:
    schedule.delete()
