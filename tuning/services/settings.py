"""Kernel, ZFS and Samba/NFS server settings: plan (read-only) → apply exactly the plan → measure → revert to the
values from before Tarn touched them; drift (re-apply or forget)."""

from dataclasses import replace

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from appliance.checks import confirmed
from appliance.models import Host, Operation
from appliance.operations import Tracker, operation_runner, operation_start
from hostlib import facts, iperf, kernel
from hostlib.errors import HostError
from hostlib.runner import Transport
from shares.selectors import share_server_values
from shares.services import share_server_setting_apply
from tuning.choices import Action, ChangeKind, ChangeStatus, SettingKind
from tuning.models import ChangeSet, KernelState, Setting
from tuning.profiles import NFS, PROFILES, SMB, numbers, plan_entry, raised
from tuning.selectors import host_addresses
from tuning.services.common import TUNING, change_end
from tuning.services.inventory import kernel_refresh

NEEDS_MODULE = {("net.ipv4.tcp_congestion_control", "bbr"): "tcp_bbr", ("net.core.default_qdisc", "fq"): "sch_fq"}


def tuning_plan_start(*, host: Host, user, profile: str) -> ChangeSet:
    """A planned change set: the worker reads the host (read-only) and lists each setting with its current value,
    the target and why. Nothing changes on the host."""
    if profile not in PROFILES:
        raise ValidationError({"profile": f"Choose one of: {', '.join(PROFILES)}."})
    p = PROFILES[profile]
    with transaction.atomic():
        cs = ChangeSet.objects.create(
            host=host, kind=ChangeKind.PROFILE, profile=profile, title=f"Base tuning: {p.title}", created_by=user
        )
        cs.operation = operation_start(kind="tuning.plan", host=host, user=user, params={"change_set": cs.pk})
        cs.save(update_fields=["operation"])
    return cs


@operation_runner("tuning.plan", lock=f"{TUNING}:plan", reads=True)
def tuning_plan_run(tracker: Tracker) -> None:
    cs = ChangeSet.objects.get(pk=tracker.op.params["change_set"])
    t = tracker.transport(read_only=True)  # a plan cannot change anything
    tracker.progress(20, f"Reading {cs.host.name}'s current values")
    entries = PROFILES[cs.profile].entries
    current = {
        kind: kernel.read(t, kind, [e.key for e in entries if e.kind == kind])
        for kind in (SettingKind.SYSCTL, SettingKind.ZFS)
    }
    current[SettingKind.SERVICE] = share_server_values(host=cs.host)
    available = kernel.modules_available(t, sorted(set(NEEDS_MODULE.values())))
    found = facts.tools_found(t, ("smbd", "exportfs"))
    servers = {SMB: "smbd" in found, NFS: "exportfs" in found}
    cores = facts.cpu_count(t)
    rows = []
    for e in entries:
        value = current[e.kind].get(e.key)
        if e.value == "auto":  # nfsd threads: one per core, at most 32
            e = replace(e, value=str(min(max(cores, 1), 32)))
        action, note = plan_entry(e, value)
        module = NEEDS_MODULE.get((e.key, e.value))
        if action == Action.SET and module and module not in available:
            action, note = Action.SKIP, f"This kernel has no {module} module."
        if action == Action.SET and e.condition in servers and not servers[e.condition]:
            action, note = Action.SKIP, f"{'Samba' if e.condition == SMB else 'The NFS server'} is not installed here."
        target = raised(e, value) if action == Action.SET else e.value
        rows.append(
            Setting(
                change_set=cs,
                host=cs.host,
                kind=e.kind,
                key=e.key,
                original=value or "",
                value=target,
                reason=e.why,
                source=e.source,
                action=action,
                note=note,
            )
        )
    Setting.objects.bulk_create(rows)
    change_end(cs, ChangeStatus.PLANNED)
    changes = sum(r.action == Action.SET for r in rows)
    tracker.progress(100, f"Plan ready: {changes} setting{'s' * (changes != 1)} would change; nothing changed yet.")


def setting_start(*, host: Host, user, kind: str, key: str, value: str, reason: str, confirm: str = "") -> ChangeSet:
    """One setting: a key Tarn may keep (no hardening switch, no secret), a value that fits the key's type and has
    the current value's shape (checked against the host's last-read values), and a durability risk only with the
    key typed into confirm; then planned and applied by one operation (the worker checks it live again)."""
    try:
        key = kernel.check_allowed(kind, key)
    except ValueError as exc:
        raise ValidationError({"key": str(exc)}) from None
    try:
        value = kernel.check_range(kind, key, kernel.check_value(value))
    except ValueError as exc:
        raise ValidationError({"value": str(exc)}) from None
    risk = kernel.durability_risk(kind, key, value)
    if risk:
        confirmed(confirm, key, f"{risk} To set it anyway, type {key} to confirm.")
    state = KernelState.objects.filter(host=host).first()
    if state is None:
        raise ValidationError({"key": f"Tarn has not read {host.name}'s kernel values yet: press Refresh first."})
    current = state.values(kind).get(key)
    if current is None:
        raise ValidationError({"key": f"{host.name} has no {kind} setting {key}."})
    have, want = numbers(current), numbers(value)
    if (have is None) != (want is None) or (have and len(have) != len(want)):
        raise ValidationError({"value": f"{key} takes a value shaped like its current one: {current}"})
    with transaction.atomic():
        cs = ChangeSet.objects.create(
            host=host,
            kind=ChangeKind.TUNABLE,
            title=f"{key} = {value}",
            reason=reason,
            created_by=user,
            status=ChangeStatus.PLANNED,
            target={"confirmed": [key]} if risk else {},
        )
        Setting.objects.create(
            change_set=cs,
            host=host,
            kind=kind,
            key=key,
            original=current,
            value=value,
            reason=reason,
            source="set by hand",
        )
        _apply_start(cs, user)
    return cs


def tuning_apply_start(
    *,
    change_set: ChangeSet,
    user,
    measure: bool = False,
    peer: Host | None = None,
    address: str = "",
    revert_if_worse: bool = False,
) -> ChangeSet:
    """Apply a planned change set: exactly its planned settings. With measure, iperf3 runs before and after
    between peer (a host Tarn manages) and address (one of this host's addresses)."""
    cs = change_set
    if cs.status != ChangeStatus.PLANNED:
        raise ValidationError({"change_set": "Only a planned change set can be applied; plan again."})
    if measure:
        if peer is None or peer.pk == cs.host_id:
            raise ValidationError({"peer": "Choose another host to measure from (the far end of the link)."})
        if address not in host_addresses(cs.host):
            raise ValidationError({"address": f"Choose one of {cs.host.name}'s addresses."})
    cs.measure, cs.measure_peer, cs.measure_address, cs.revert_if_worse = measure, peer, address, revert_if_worse
    with transaction.atomic():
        cs.save(update_fields=["measure", "measure_peer", "measure_address", "revert_if_worse"])
        _apply_start(cs, user)
    return cs


def _apply_start(cs: ChangeSet, user) -> Operation:
    cs.status = ChangeStatus.APPLYING
    cs.operation = operation_start(kind="tuning.apply", host=cs.host, user=user, params={"change_set": cs.pk})
    cs.save(update_fields=["status", "operation"])
    return cs.operation


def _measure(cs: ChangeSet, tracker: Tracker, label: str) -> dict:
    """iperf3 both ways between the peer and the tuned host: 'to' (peer sends) and 'from' (the host sends)."""
    seconds = settings.TARN_TUNING_MEASURE_SECONDS
    server = tracker.transport()
    client = tracker.transport(cs.measure_peer)
    results = {}
    for direction, reverse in (("to_host", False), ("from_host", True)):
        tracker.log(f"iperf3 {label}: {cs.measure_peer.name} {'←' if reverse else '→'} {cs.host.name}, {seconds} s")
        r = iperf.measure(server, client, cs.measure_address, seconds=seconds, reverse=reverse, tag=str(tracker.op.pk))
        results[direction] = r.as_dict()
    return results


def _current(t: Transport, host: Host, kind: str, key: str) -> str | None:
    if kind == SettingKind.SERVICE:
        return share_server_values(host=host).get(key)
    return kernel.read(t, kind, [key]).get(key)


def _write(t: Transport, host: Host, kind: str, key: str, value: str, *, restoring: bool = False) -> None:
    """One setting, at runtime: the kernel's, or a Samba / NFS server setting applied through the shares app (its
    config checked with testparm and written, the old one kept if refused). restoring: the host's own value from
    before Tarn goes back (a revert), which may be one Tarn would not set itself."""
    if kind == SettingKind.SERVICE:
        share_server_setting_apply(t, host=host, key=key, value=value)
    else:
        try:
            kernel.write(t, kind, key, value, restoring=restoring)
        except ValueError as exc:  # out of the key's range, or a hardening switch: the change fails, named
            raise HostError(f"{key}: {exc}") from None


def _check_kept(cs: ChangeSet, s: Setting) -> None:
    """Again in the worker, before anything is written: a kernel value Tarn sets and keeps is allowed, in range,
    and a durability risk only where the admin typed the key to confirm it."""
    if s.kind == SettingKind.SERVICE:
        return
    try:
        kernel.check_setting(s.kind, s.key, s.value, confirmed=s.key in (cs.target or {}).get("confirmed", ()))
    except ValueError as exc:
        raise HostError(f"{s.key}: {exc}") from None


def _persist_kernel(t: Transport, host: Host) -> None:
    """Tarn's files hold every active setting of the host (sysctl.d read at boot, modprobe.d at module load)."""
    active = Setting.objects.filter(host=host, active=True)
    t.write_file(kernel.SYSCTL_FILE, kernel.render_sysctl({s.key: s.value for s in active if s.kind == "sysctl"}))
    t.write_file(kernel.MODPROBE_FILE, kernel.render_modprobe({s.key: s.value for s in active if s.kind == "zfs"}))


@operation_runner("tuning.apply", lock=TUNING)
def tuning_apply_run(tracker: Tracker) -> None:
    cs = ChangeSet.objects.get(pk=tracker.op.params["change_set"])
    t = tracker.transport()
    try:
        if cs.measure:
            tracker.progress(5, "Measuring before")
            cs.before = _measure(cs, tracker, "before")
            cs.save(update_fields=["before"])
        planned = list(cs.settings.filter(action=Action.SET))
        for i, s in enumerate(planned, 1):
            tracker.progress(30 + 40 * i // max(len(planned), 1), f"{s.key} = {s.value}")
            _check_kept(cs, s)
            now = _current(t, cs.host, s.kind, s.key)
            if now is None or (now != s.original and now != s.value):
                s.action, s.note = Action.SKIP, f"Changed since the plan (now {now}); left alone."
                s.save(update_fields=["action", "note"])
                continue
            _write(t, cs.host, s.kind, s.key, s.value)
            with transaction.atomic():
                earlier = Setting.objects.filter(host=cs.host, kind=s.kind, key=s.key, active=True).first()
                if earlier:  # a revert goes back to the value from before Tarn touched it
                    s.original = earlier.original
                    Setting.objects.filter(pk=earlier.pk).update(active=False, note=f"Replaced by change {cs.pk}.")
                s.active = True
                s.save(update_fields=["original", "active"])
        _persist_kernel(t, cs.host)
        kernel_refresh(host=cs.host, t=t)
        if cs.measure:
            tracker.progress(80, "Measuring after")
            cs.after = _measure(cs, tracker, "after")
            cs.save(update_fields=["after"])
    except (HostError, ValidationError) as exc:  # a host refusal, or Samba/NFS refusing a server setting
        message = "; ".join(getattr(exc, "messages", [str(exc)]))
        if applied := cs.settings.filter(active=True).count():
            # what was written before the refusal is in effect: the boot files and the stored values say so too
            try:
                _persist_kernel(t, cs.host)
                kernel_refresh(host=cs.host, t=t)
            except HostError:
                pass
            message += f" The {applied} setting(s) applied before it stay in effect; Revert undoes them."
        change_end(cs, ChangeStatus.FAILED, message)
        raise
    worse = [d for d, ratio in cs.effect.items() if ratio < 0.95]
    if worse and cs.revert_if_worse:
        _revert(t, list(cs.settings.filter(active=True)))
        change_end(cs, ChangeStatus.REVERTED, f"Reverted: slower after ({', '.join(worse)}).")
        tracker.progress(100, cs.message)
        return
    change_end(cs, ChangeStatus.APPLIED, "Slower after: consider reverting." if worse else "")
    changed = cs.settings.filter(active=True).count()
    tracker.progress(100, f"Applied {changed} setting{'s' * (changed != 1)}." + (" " + cs.message if worse else ""))


def tuning_revert_start(*, host: Host, user, change_set: ChangeSet | None = None, setting: Setting | None = None):
    """Put back the original values of a change set's active settings, or of one setting."""
    scope = [setting] if setting else list(change_set.settings.filter(active=True))
    scope = [s for s in scope if s and s.active and s.host_id == host.pk]
    if not scope:
        raise ValidationError({"change_set": "Nothing of this change is in effect any more."})
    return operation_start(
        kind="tuning.revert",
        host=host,
        user=user,
        params={"settings": [s.pk for s in scope], "change_set": change_set.pk if change_set else None},
    )


def _revert(t: Transport, scope: list[Setting]) -> None:
    host = scope[0].host
    for s in scope:
        _write(t, host, s.kind, s.key, s.original, restoring=True)
        Setting.objects.filter(pk=s.pk).update(active=False, reverted_at=timezone.now())
    _persist_kernel(t, host)
    kernel_refresh(host=host, t=t)


@operation_runner("tuning.revert", lock=TUNING)
def tuning_revert_run(tracker: Tracker) -> None:
    scope = list(Setting.objects.filter(pk__in=tracker.op.params["settings"], active=True))
    if not scope:
        tracker.progress(100, "Nothing left to revert.")
        return
    t = tracker.transport()
    tracker.progress(30, f"Putting back {len(scope)} original value{'s' * (len(scope) != 1)}")
    _revert(t, scope)
    for cs in ChangeSet.objects.filter(pk__in={s.change_set_id for s in scope}):
        if not cs.settings.filter(active=True).exists():
            change_end(cs, ChangeStatus.REVERTED, "Every original value is back.")
    tracker.progress(100, f"Reverted {', '.join(s.key for s in scope)}.")


def drift_start(*, host: Host, user, setting: Setting, action: str) -> Operation | None:
    """A setting that no longer matches what Tarn applied: re-apply it, or forget it (Tarn stops keeping it)."""
    if not setting.active or setting.host_id != host.pk:
        raise ValidationError({"setting": "Tarn does not keep that setting any more."})
    if action == "forget":
        with transaction.atomic():
            Setting.objects.filter(pk=setting.pk).update(active=False, note="Forgotten after it drifted.")
            return operation_start(kind="tuning.persist", host=host, user=user)
    if action != "reapply":
        raise ValidationError({"action": "Re-apply or forget."})
    return operation_start(kind="tuning.reapply", host=host, user=user, params={"settings": [setting.pk]})


@operation_runner("tuning.reapply", "tuning.persist", lock=TUNING)
def tuning_reapply_run(tracker: Tracker) -> None:
    host = tracker.op.host
    t = tracker.transport()
    for s in Setting.objects.filter(pk__in=tracker.op.params.get("settings", []), active=True):
        _write(t, host, s.kind, s.key, s.value)
    _persist_kernel(t, host)
    kernel_refresh(host=host, t=t)
    tracker.progress(100, "Tarn's settings and files match again.")
