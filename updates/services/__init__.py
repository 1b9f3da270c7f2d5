"""Writes for updates: a host's check (the package lists refreshed, apt's simulation and the guard's facts read, one
row kept) and its update (dpkg repaired first if it was cut short, the kernels the guard refuses held, apt's
full-upgrade as a unit on the host, its log kept, the guard asked again over every kernel in /boot). Each is an
Operation on the host's "updates" target: a second one queued on the same host is refused."""

import time
from dataclasses import asdict

from django.core.exceptions import ValidationError
from django.utils import timezone

from appliance.operations import Tracker, operation_runner, operation_start
from hostlib import updates
from hostlib.runner import Transport
from updates.choices import APPLY_SECONDS, LOG_LINES, POLL_SECONDS
from updates.models import HostUpdates


def updates_check_start(*, host, user):
    """Refresh the host's package lists and read what an update would do: an Operation."""
    return operation_start(kind="updates.check", host=host, user=user)


def updates_apply_start(*, host, user):
    """Install what the check found, less what the guard holds: an Operation. Refused before a check."""
    if not HostUpdates.objects.filter(host=host, checked_at__isnull=False).exists():
        raise ValidationError({"host": f"Check {host.name} for updates first: Tarn shows what it would install."})
    return operation_start(kind="updates.apply", host=host, user=user, seconds=APPLY_SECONDS)


def _pending(simulation: updates.Simulation) -> list[dict]:
    return [
        {
            "name": p.name,
            "old": p.old,
            "new": p.new,
            "origins": list(p.origins),
            "security": p.security,
            "kernel": p.kernel,
            "zfs": p.zfs,
        }
        for p in simulation.pending
    ]


def _guard(guard: updates.Guard) -> dict:
    return {
        "userland": guard.userland,
        "ok": guard.ok,
        "verdicts": [asdict(v) for v in guard.verdicts],
        "hold": list(guard.hold),
    }


def _keep(host, facts: updates.Facts, **extra) -> HostUpdates:
    row, _ = HostUpdates.objects.get_or_create(host=host)
    row.checked_at = timezone.now()
    row.pending, row.removed = _pending(facts.simulation), list(facts.simulation.removed)
    row.guard, row.held = _guard(facts.guard()), facts.held
    row.interrupted, row.reboot = facts.interrupted, facts.reboot
    for name, value in extra.items():
        setattr(row, name, value)
    row.save()
    return row


def _summary(row: HostUpdates) -> str:
    if not row.pending:
        return "Up to date: apt has nothing to install"
    kernels = [p["name"] for p in row.pending if p["kernel"]]
    zfs = [p["name"] for p in row.pending if p["zfs"]]
    said = f"{len(row.pending)} update(s), {row.security} from a security archive"
    said += f"; kernel: {', '.join(kernels)}" if kernels else ""
    said += f"; ZFS: {', '.join(zfs)}" if zfs else ""
    if not row.guard.get("ok", True):
        said += "; the guard would hold " + ", ".join(row.guard["hold"]) if row.guard.get("hold") else ""
    return said


@operation_runner("updates.check", lock="updates")
def updates_check_run(tracker: Tracker) -> None:
    t = tracker.transport()
    tracker.progress(10, "Refreshing the package lists (apt-get update)")
    updates.refresh_lists(t)
    tracker.progress(60, "Reading what an update would install, and every kernel's ZFS module")
    row = _keep(tracker.op.host, updates.read_facts(t))
    tracker.progress(100, _summary(row))


def _run_unit(tracker: Tracker, t: Transport, what: str, *, steps: int, start: int, end: int) -> str:
    """Run the upgrade or the repair as a unit on the host and follow it; returns its log. Fails with the log's end
    when the unit fails."""
    op = tracker.op.pk
    log = updates.unit_start(t, what, op)
    tracker.log(f"{' '.join(updates.UPGRADE if what == 'updates' else updates.REPAIR)}: as the unit "
                f"{updates.unit_name(what, op)}, its output in {log} on {tracker.op.host.name}")  # fmt: skip
    while (state := updates.unit_state(t, what, op)) == "running":
        time.sleep(POLL_SECONDS)
        done = updates.log_progress(updates.log_read(t, log), steps)
        tracker.progress(start + (end - start) * done // 100, f"{what}: {done}% of the packages")
    text = updates.log_read(t, log)
    for line in text.splitlines()[-LOG_LINES:]:
        tracker.log(line)
    if state != "succeeded":
        last = [line for line in text.splitlines() if line.strip()][-3:]
        raise ValidationError(f"{' '.join(updates.UPGRADE[:1] if what == 'updates' else updates.REPAIR)} failed: "
                              f"{' / '.join(last)[:600]} (the whole log: {log})")  # fmt: skip
    return text


@operation_runner("updates.apply", lock="updates")
def updates_apply_run(tracker: Tracker) -> None:
    host, t = tracker.op.host, tracker.transport()
    if updates.dpkg_interrupted(t):
        tracker.progress(5, "dpkg was cut short last time: dpkg --configure -a first")
        _run_unit(tracker, t, "repair", steps=1, start=5, end=10)
    tracker.progress(10, "Refreshing the package lists and asking the guard")
    updates.refresh_lists(t)
    facts = updates.read_facts(t)
    guard = facts.guard()
    for verdict in guard.verdicts:
        tracker.log(f"guard: {verdict.release}: {'ok' if verdict.ok else 'refused'}: {verdict.why}")
    if guard.hold:
        updates.hold(t, list(guard.hold))
        tracker.log(f"held (apt-mark hold): {', '.join(guard.hold)}")
        facts = updates.read_facts(t)  # what apt would now install, the held ones kept back
    steps = len(facts.simulation.pending)
    if steps:
        _run_unit(tracker, t, "updates", steps=steps, start=20, end=90)
    tracker.progress(92, "Asking the guard again: every kernel in /boot")
    after = updates.read_facts(t)
    boot = _guard(after.guard_now())
    row = _keep(host, after, boot=boot)
    said = f"Installed {steps} package(s)" if steps else "Nothing to install"
    if guard.hold:
        said += f"; held {', '.join(guard.hold)}: " + "; ".join(v.why for v in guard.verdicts if not v.ok)
    if not boot["ok"]:
        bad = [v for v in boot["verdicts"] if not v["ok"]]
        said += "; do not reboot: " + "; ".join(f"{v['release']}: {v['why']}" for v in bad)
    elif row.reboot:
        said += f"; a reboot is needed, and every kernel in /boot has zfs {after.userland}"
    tracker.progress(100, said)
