"""Writes for updates: a host's check (the package lists refreshed, apt's simulation and the guard's facts read, one
row kept) and its update (dpkg repaired first if it was cut short, the kernels the guard refuses held, apt's
full-upgrade as a unit on the host, its log kept, the guard asked again over every kernel in /boot). Each is an
Operation on the host's "updates" target: a second one queued on the same host is refused."""

import time
from dataclasses import asdict

from django.core.exceptions import ValidationError
from django.utils import timezone

from appliance.checks import confirmed
from appliance.operations import Tracker, operation_runner, operation_start
from hostlib import updates
from hostlib.errors import HostError
from hostlib.runner import Transport
from updates.choices import APPLY_SECONDS, BOOT_SECONDS, LOG_LINES, POLL_SECONDS
from updates.models import HostUpdates


def updates_check_start(*, host, user):
    """Refresh the host's package lists and read what an update would do: an Operation."""
    return operation_start(kind="updates.check", host=host, user=user)


def updates_apply_start(*, host, user):
    """Install what the check found, less what the guard holds: an Operation. Refused before a check."""
    if not HostUpdates.objects.filter(host=host, checked_at__isnull=False).exists():
        raise ValidationError({"host": f"Check {host.name} for updates first: Tarn shows what it would install."})
    return operation_start(kind="updates.apply", host=host, user=user, seconds=APPLY_SECONDS)


def updates_reboot_start(*, host, user, confirm: str):
    """Reboot the host once the guard found every kernel in /boot with its module: an Operation that waits for the
    host to come back and reports its pools and the encryption roots still locked. The host's name typed."""
    confirmed(confirm, host.name, f"Type {host.name} to reboot it.")
    row = HostUpdates.objects.filter(host=host).first()
    if row is None or not row.boot.get("verdicts"):
        raise ValidationError({"host": f"Install the updates on {host.name} first: the guard then looks at /boot."})
    if not row.boot.get("ok"):
        raise ValidationError({"host": "Not offered: a kernel in /boot has no ZFS module of the tools' version."})
    return operation_start(kind="updates.reboot", host=host, user=user)


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


@operation_runner("updates.reboot", lock="updates")
def updates_reboot_run(tracker: Tracker) -> None:
    host, t = tracker.op.host, tracker.transport()
    facts = updates.read_facts(t)
    guard = facts.guard_now()
    if not guard.ok:  # asked again now: /boot may have changed since the update
        bad = "; ".join(f"{v.release}: {v.why}" for v in guard.verdicts if not v.ok)
        raise ValidationError(f"Not rebooted: {bad}")
    before, boot = updates.storage(t), updates.boot_id(t)
    tracker.log(f"before: pools {', '.join(before.pools) or 'none'}; locked roots {', '.join(before.locked) or 'none'}")
    tracker.progress(10, f"Rebooting {host.name}")
    updates.reboot(t)
    started = time.monotonic()
    while True:
        time.sleep(POLL_SECONDS * 2)
        try:
            if updates.boot_id(t) != boot:
                break
        except HostError:
            pass  # down, or booting
        waited = time.monotonic() - started
        if waited > BOOT_SECONDS:
            raise ValidationError(f"{host.name} did not come back within {BOOT_SECONDS} s of the reboot.")
        tracker.progress(10 + min(70, int(70 * waited / BOOT_SECONDS)), f"Waiting for {host.name} ({waited:.0f} s)")
    took = time.monotonic() - started
    tracker.progress(85, "Back: looking at its pools")
    after, kernel = _settled(t, before.pools), updates.running_kernel(t)
    missing = [p for p in before.pools if p not in after.pools]
    said = f"Back after {took:.0f} s on {kernel}: pools {', '.join(after.pools) or 'none'} imported"
    if after.locked:
        said += f"; encryption roots still locked: {', '.join(after.locked)} (unlock them on the Encryption page)"
    if missing:
        raise ValidationError(f"{said}; NOT imported: {', '.join(missing)}")
    facts = updates.read_facts(t)
    _keep(host, facts, boot=_guard(facts.guard_now()))
    tracker.progress(100, said)


def _settled(t: Transport, expected: tuple[str, ...]) -> updates.Storage:
    """The pools once the boot's imports are done (zfs-import runs early, but a slow one may still be at it): asked
    again for a while as long as one imported before is missing."""
    found = updates.storage(t)
    for _ in range(10):
        if set(expected) <= set(found.pools):
            break
        time.sleep(POLL_SECONDS)
        found = updates.storage(t)
    return found
