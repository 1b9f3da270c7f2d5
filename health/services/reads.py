"""Disk health reads: a host's health pass (every disk read side by side, each with its own timeout, a sleeping disk
left asleep), the read as an operation, which hosts are due one, and pruning the temperature history."""

import re
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import timedelta

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from analytics.selectors import rules
from appliance.choices import RunStatus
from appliance.connect import transport_for
from appliance.models import Host, Operation
from appliance.operations import TargetBusy, Tracker, operation_runner, operation_start
from health.choices import POLL_MINUTES, READ_PARALLEL, RUN_POLL_MINUTES, TEMPERATURE_DAYS, HealthState
from health.models import DiskHealth, HealthPass, SelfTestRun, TemperaturePoint
from health.services.runs import runs_advance
from health.services.schedules import schedules_run_due
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


def health_read_start(*, host: Host | None, user) -> Operation:
    if host is None:
        raise ValidationError({"host": "Add a host first (Hosts → Add host)."})
    return operation_start(kind="health.read", host=host, user=user)


@operation_runner("health.read", lock="health", reads=True)
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
