"""Writes for updates: a host's check (the package lists refreshed, apt's simulation and the guard's facts read, one
row kept) and its update (dpkg repaired first if it was cut short, the kernels the guard refuses held, apt's
full-upgrade as a unit on the host, its log kept, the guard asked again over every kernel in /boot). Each is an
Operation on the host's "updates" target: a second one queued on the same host is refused."""

import secrets
import time
from dataclasses import asdict

from django.core.exceptions import ValidationError
from django.utils import timezone

from appliance.checks import confirmed
from appliance.choices import OperationStatus
from appliance.models import Host, Operation
from appliance.operations import Tracker, lock_key, operation_runner, operation_start
from hostlib import updates
from hostlib.errors import HostError
from hostlib.runner import Transport
from updates.choices import APPLY_SECONDS, BOOT_SECONDS, LOG_LINES, POLL_SECONDS, UNKNOWN_MAX
from updates.models import HostUpdates


def _host(host):
    if host is None:
        raise ValidationError({"host": "Add a host first (Hosts), then pick it in the switcher."})
    return host


def updates_check_start(*, host, user):
    """Refresh the host's package lists and read what an update would do: an Operation."""
    return operation_start(kind="updates.check", host=_host(host), user=user)


def updates_apply_start(*, host, user):
    """Install what the check found, less what the guard holds: an Operation. Refused before a check."""
    _host(host)
    if not HostUpdates.objects.filter(host=host, checked_at__isnull=False).exists():
        raise ValidationError({"host": f"Check {host.name} for updates first: Tarn shows what it would install."})
    return operation_start(kind="updates.apply", host=host, user=user, seconds=APPLY_SECONDS)


def updates_reboot_start(*, host, user, confirm: str):
    """Reboot the host once the guard found every kernel in /boot with its module: an Operation that waits for the
    host to come back and reports its pools and the encryption roots still locked. The host's name typed."""
    _host(host)
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


@operation_runner("updates.check", lock="updates", queue="default")
def updates_check_run(tracker: Tracker) -> None:
    t = tracker.transport()
    _not_running(t, tracker.op.host)
    tracker.progress(10, "Refreshing the package lists (apt-get update)")
    updates.refresh_lists(t)
    tracker.progress(60, "Reading what an update would install, and every kernel's ZFS module")
    row = _keep(tracker.op.host, _facts(t))
    tracker.progress(100, _summary(row))


class _Step:
    """One host's part of an operation: its progress between start and end percent, its log lines named by host
    when the operation spans several (a roll-out)."""

    def __init__(self, tracker: Tracker, host, *, start: int = 0, end: int = 100, named: bool = False):
        self.tracker, self.host, self.start, self.end, self.named = tracker, host, start, end, named

    def progress(self, percent: int, message: str) -> None:
        said = f"{self.host.name}: {message}" if self.named else message
        self.tracker.progress(self.start + (self.end - self.start) * percent // 100, said)

    def log(self, line: str) -> None:
        self.tracker.log(f"{self.host.name}: {line}" if self.named else line)


def _run_unit(step: _Step, t: Transport, what: str, *, steps: int, start: int, end: int) -> str:
    """Run the upgrade or the repair as a unit on the host and follow it; returns its log's end. Fails with the log's
    end when the unit fails; a host that does not answer for a while, or a unit still going at the deadline, fails
    the operation while the unit goes on (the next check or update waits for it: units_active)."""
    unit = updates.unit_name(what, step.tracker.op.pk, secrets.randbelow(10**6))
    argv = updates.UPGRADE if what == "updates" else updates.REPAIR
    log = updates.unit_start(t, what, unit)
    step.log(f"{' '.join(argv)}: as the unit {unit}, its output in {log} on {step.host.name}")
    deadline, unknown = time.monotonic() + APPLY_SECONDS - 600, 0
    while True:
        time.sleep(POLL_SECONDS)
        try:
            state = updates.unit_state(t, unit)
        except HostError:  # the link dropped a moment (apt restarting sshd): asked again
            state = "unknown"
        if state not in ("running", "unknown"):
            break
        unknown = unknown + 1 if state == "unknown" else 0
        if unknown > UNKNOWN_MAX or time.monotonic() > deadline:
            raise ValidationError(
                f"Lost track of {unit} on {step.host.name} (it may still run; its log: {log}): the next update "
                "waits for it to end."
            )
        if state == "running":
            try:
                done = updates.log_progress(updates.log_read(t, log), steps)
            except HostError:
                continue
            step.progress(start + (end - start) * done // 100, f"{what}: {done}% of the packages")
    text = updates.log_read(t, log)
    updates.unit_forget(t, unit)
    step.log("\n".join(line[:300] for line in text.splitlines()[-LOG_LINES:]))
    if state != "succeeded":
        last = " / ".join([line for line in text.splitlines() if line.strip()][-3:])[:600]
        command = argv[0] if what == "updates" else " ".join(argv)
        raise ValidationError(f"{command} failed: {last} (the whole log: {log})")
    return text


def _facts(t: Transport) -> updates.Facts:
    """The host's facts, or what it printed that Tarn cannot read as a refusal (never an internal error)."""
    try:
        return updates.read_facts(t)
    except ValueError as exc:
        raise ValidationError(str(exc)[:500]) from None


def _not_running(t: Transport, host) -> None:
    running = updates.units_active(t)
    if running:
        raise ValidationError(
            f"An update is still running on {host.name} as {', '.join(running)}: wait for it to end (its log: "
            f"{updates.log_path(running[0])})."
        )


def _removals(facts: updates.Facts) -> None:
    """apt may remove packages to upgrade others: never a ZFS package or an installed kernel."""
    kernels = {f"linux-image-{k}" for k in facts.kernels}
    bad = [n for n in facts.simulation.removed if updates.ZFS.fullmatch(n.split(":")[0]) or n in kernels]
    if bad:
        raise ValidationError(f"apt would remove {', '.join(bad)}: refused (install by hand after a look).")


def _apply(step: _Step, t: Transport) -> tuple[str, bool]:
    """One host's update (see the module's text): what to say, and whether every kernel in /boot has its module."""
    _not_running(t, step.host)
    if updates.dpkg_interrupted(t):
        step.progress(5, "dpkg was cut short last time: dpkg --configure -a first")
        _run_unit(step, t, "repair", steps=1, start=5, end=10)
    step.progress(10, "Refreshing the package lists and asking the guard")
    updates.refresh_lists(t)
    facts = _facts(t)
    guard = facts.guard()
    for verdict in guard.verdicts:
        step.log(f"guard: {verdict.release}: {'ok' if verdict.ok else 'refused'}: {verdict.why}")
    if guard.hold:
        updates.hold(t, list(guard.hold))
        step.log(f"held (apt-mark hold): {', '.join(guard.hold)}")
        facts = _facts(t)  # what apt would now install, the held ones kept back
        if facts.guard().hold:  # what apt would still bring is refused too (another metapackage pulls it in)
            raise ValidationError("The guard still refuses what apt would install once held: nothing installed.")
    _removals(facts)
    steps = len(facts.simulation.pending)
    if steps:
        _run_unit(step, t, "updates", steps=steps, start=20, end=90)
    step.progress(92, "Asking the guard again: every kernel in /boot")
    after = _facts(t)
    boot = _guard(after.guard_now())
    row = _keep(step.host, after, boot=boot)
    said = f"Installed {steps} package(s)" if steps else "Nothing to install"
    if guard.hold:
        said += f"; held {', '.join(guard.hold)}: " + "; ".join(v.why for v in guard.verdicts if not v.ok)
    if not boot["ok"]:
        bad = [v for v in boot["verdicts"] if not v["ok"]]
        said += "; do not reboot: " + "; ".join(f"{v['release']}: {v['why']}" for v in bad)
    elif row.reboot:
        said += f"; a reboot is needed, and every kernel in /boot has zfs {after.userland}"
    return said, boot["ok"]


@operation_runner("updates.apply", lock="updates", queue="default")
def updates_apply_run(tracker: Tracker) -> None:
    said, _ = _apply(_Step(tracker, tracker.op.host), tracker.transport())
    tracker.progress(100, said)


def updates_rollout_start(*, user, hosts: list):
    """Update these hosts one at a time, in this order, the first as the canary: the first failure (or a host left
    with a kernel lacking its module) stops the roll-out before the next host. Each must have been checked."""
    if not hosts:
        raise ValidationError({"hosts": "Choose the hosts to update (the first is the canary)."})
    names = [h.name for h in hosts]
    if len(set(names)) != len(names):
        raise ValidationError({"hosts": "A host is named twice."})
    unchecked = [h.name for h in hosts if not HostUpdates.objects.filter(host=h, checked_at__isnull=False).exists()]
    if unchecked:
        raise ValidationError({"hosts": f"Check {', '.join(unchecked)} for updates first."})
    read_only = [h.name for h in hosts if h.read_only]
    if read_only:
        raise ValidationError({"hosts": f"{', '.join(read_only)}: read-only in Tarn, nothing is changed there."})
    busy = [h.name for h in hosts if _busy(h)]
    if busy:
        raise ValidationError({"hosts": f"{', '.join(busy)}: an update or a check is running there; wait for it."})
    return operation_start(
        kind="updates.rollout", host=None, user=user, params={"hosts": names}, seconds=APPLY_SECONDS * len(names)
    )


def _busy(host) -> bool:
    return Operation.objects.filter(target=lock_key(host, "updates"), status__in=OperationStatus.active()).exists()


@operation_runner("updates.rollout", lock="updates", queue="default")
def updates_rollout_run(tracker: Tracker) -> None:
    names = tracker.op.params["hosts"]
    done: list[str] = []
    for i, name in enumerate(names):
        host = Host.objects.filter(name=name).first()
        role = "the canary" if i == 0 else f"{i + 1} of {len(names)}"
        left = ", ".join(names[i + 1 :]) or "none"
        if host is None or host.read_only or _busy(host):
            why = "gone from Tarn" if host is None else "read-only" if host.read_only else "busy with another update"
            raise ValidationError(f"Stopped at {name} ({role}): {why}; not updated: {left}")
        step = _Step(tracker, host, start=100 * i // len(names), end=100 * (i + 1) // len(names), named=True)
        try:
            said, boot_ok = _apply(step, tracker.transport(host))
        except (ValidationError, HostError) as exc:
            why = "; ".join(exc.messages) if isinstance(exc, ValidationError) else str(exc)
            raise ValidationError(f"Stopped at {name} ({role}): {why}; not updated: {left}") from None
        step.log(said)
        if not boot_ok:
            raise ValidationError(f"Stopped at {name} ({role}): {said}; not updated: {left}")
        done.append(name)
    tracker.progress(100, f"Updated {', '.join(done)} one at a time ({done[0]} first, as the canary)")


@operation_runner("updates.reboot", lock="updates", queue="default")
def updates_reboot_run(tracker: Tracker) -> None:
    host, t = tracker.op.host, tracker.transport()
    _not_running(t, host)
    facts = _facts(t)
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
    facts = _facts(t)
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
