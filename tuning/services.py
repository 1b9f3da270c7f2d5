"""Writes for tuning. Every change is a ChangeSet (revertible, with each setting's original value) applied by an
Operation. Kernel and ZFS settings: plan (read-only) → apply → measure → keep or revert. Network changes (MTU,
bridges): the restore is armed on the host as a transient timer before anything changes, so a change that cuts
the link heals itself; Keep disarms it and writes the systemd-networkd files that make it survive a reboot."""

from dataclasses import asdict
from datetime import timedelta

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from appliance.connect import transport_for
from appliance.host import iperf, kernel, net, systemd
from appliance.host.errors import HostError, HostUnreachable
from appliance.host.runner import Transport
from appliance.models import Host, Operation
from appliance.operations import TargetBusy, Tracker, operation_runner, operation_start
from tuning.choices import (
    ROLLBACK_SECONDS_MAX,
    ROLLBACK_SECONDS_MIN,
    Action,
    ChangeKind,
    ChangeStatus,
    SettingKind,
)
from tuning.models import ChangeSet, KernelState, Link, Setting
from tuning.profiles import PROFILES, numbers, plan_entry, raised

RUN_DIR = "/run/tarn"
NEEDS_MODULE = {("net.ipv4.tcp_congestion_control", "bbr"): "tcp_bbr", ("net.core.default_qdisc", "fq"): "sch_fq"}


def _target(host: Host) -> str:
    return f"host:{host.name}:tuning"


def _end(cs: ChangeSet, status: str, message: str = "") -> None:
    cs.status, cs.message = status, message[:1000]
    if status not in (ChangeStatus.PLANNING, ChangeStatus.APPLYING, ChangeStatus.PENDING):
        cs.ended_at = timezone.now()
    cs.save(update_fields=["status", "message", "ended_at"])


# --- inventory: links and kernel values ----------------------------------------------------------------------------
def links_refresh(*, host: Host, t: Transport | None = None) -> list[Link]:
    """Mirror the host's links (NICs with ethtool details) into Link rows, in place on (host, name)."""
    t = t or transport_for(host)
    observed = net.read_links(t)
    management = net.management_links(t, observed)
    now = timezone.now()
    with transaction.atomic():
        Link.objects.filter(host=host).exclude(name__in=[x.name for x in observed]).delete()
        managed = set(Link.objects.filter(host=host, managed=True).values_list("name", flat=True))
        for x in observed:
            Link.objects.update_or_create(
                host=host,
                name=x.name,
                defaults={
                    "kind": x.kind, "mac": x.mac, "mtu": x.mtu, "min_mtu": x.min_mtu, "max_mtu": x.max_mtu,
                    "state": x.state, "up": x.up, "master": x.master,
                    "addresses": [asdict(a) for a in x.addresses], "counters": x.counters, "driver": x.driver,
                    "speed_mbps": x.speed_mbps, "rings": x.rings, "offloads": x.offloads,
                    "managed": x.name in managed, "management": x.name in management, "observed_at": now,
                },
            )  # fmt: skip
    return list(Link.objects.filter(host=host))


def kernel_refresh(*, host: Host, t: Transport | None = None) -> KernelState:
    t = t or transport_for(host)
    state, _ = KernelState.objects.update_or_create(
        host=host,
        defaults={
            "sysctl": kernel.read_all_sysctls(t),
            "zfs": kernel.read_all_parameters(t),
            "observed_at": timezone.now(),
        },
    )
    return state


def tuning_refresh(*, host: Host, operation: Operation | None = None) -> None:
    t = transport_for(host, operation=operation)
    links_refresh(host=host, t=t)
    kernel_refresh(host=host, t=t)


def tuning_refresh_schedule() -> int:
    """Beat: re-read every host's links and kernel values (drift shows on the page from this), each as an
    operation on that host's queue."""
    queued = 0
    for host in Host.objects.all():
        try:
            tuning_refresh_start(host=host, user=None)
            queued += 1
        except TargetBusy:
            continue
    return queued


# --- kernel and ZFS settings: plan, apply, revert -----------------------------------------------------------------
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
        cs.operation = operation_start(
            kind="tuning.plan", target=f"{_target(host)}:plan", host=host, user=user, params={"change_set": cs.pk}
        )
        cs.save(update_fields=["operation"])
    return cs


@operation_runner("tuning.plan")
def tuning_plan_run(tracker: Tracker) -> None:
    cs = ChangeSet.objects.get(pk=tracker.op.params["change_set"])
    t = transport_for(cs.host, operation=tracker.op, read_only=True)  # a plan cannot change anything
    tracker.progress(20, f"Reading {cs.host.name}'s current values")
    entries = PROFILES[cs.profile].entries
    current = {
        kind: kernel.read(t, kind, [e.key for e in entries if e.kind == kind])
        for kind in (SettingKind.SYSCTL, SettingKind.ZFS)
    }
    available = kernel.modules_available(t, sorted(set(NEEDS_MODULE.values())))
    rows = []
    for e in entries:
        value = current[e.kind].get(e.key)
        action, note = plan_entry(e, value)
        module = NEEDS_MODULE.get((e.key, e.value))
        if action == Action.SET and module and module not in available:
            action, note = Action.SKIP, f"This kernel has no {module} module."
        target = raised(e, value) if action == Action.SET else e.value
        rows.append(
            Setting(
                change_set=cs, host=cs.host, kind=e.kind, key=e.key, original=value or "", value=target,
                reason=e.why, source=e.source, action=action, note=note,
            )
        )  # fmt: skip
    Setting.objects.bulk_create(rows)
    _end(cs, ChangeStatus.PLANNED)
    changes = sum(r.action == Action.SET for r in rows)
    tracker.progress(100, f"Plan ready: {changes} setting{'s' * (changes != 1)} would change; nothing changed yet.")


def setting_start(*, host: Host, user, kind: str, key: str, value: str, reason: str) -> ChangeSet:
    """One setting: checked against the host's last-read values (it must exist, and the value must have the
    current value's shape), then planned and applied by one operation (the worker checks it live again)."""
    try:
        key, value = kernel.check_key(kind, key), kernel.check_value(value)
    except ValueError as exc:
        field = "key" if "is not" in str(exc) or "kind" in str(exc) else "value"
        raise ValidationError({field: str(exc)}) from None
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
            host=host, kind=ChangeKind.TUNABLE, title=f"{key} = {value}", reason=reason, created_by=user,
            status=ChangeStatus.PLANNED,
        )  # fmt: skip
        Setting.objects.create(
            change_set=cs, host=host, kind=kind, key=key, original=current, value=value, reason=reason,
            source="set by hand",
        )  # fmt: skip
        _apply_start(cs, user)
    return cs


def tuning_apply_start(*, change_set: ChangeSet, user, measure: bool = False, peer: Host | None = None,
                       address: str = "", revert_if_worse: bool = False) -> ChangeSet:  # fmt: skip
    """Apply a planned change set: exactly its planned settings. With measure, iperf3 runs before and after
    between peer (a host Tarn manages) and address (one of this host's addresses)."""
    cs = change_set
    if cs.status != ChangeStatus.PLANNED:
        raise ValidationError({"change_set": "Only a planned change set can be applied; plan again."})
    if measure:
        if peer is None or peer.pk == cs.host_id:
            raise ValidationError({"peer": "Choose another host to measure from (the far end of the link)."})
        if address not in _addresses(cs.host):
            raise ValidationError({"address": f"Choose one of {cs.host.name}'s addresses."})
    cs.measure, cs.measure_peer, cs.measure_address, cs.revert_if_worse = measure, peer, address, revert_if_worse
    with transaction.atomic():
        cs.save(update_fields=["measure", "measure_peer", "measure_address", "revert_if_worse"])
        _apply_start(cs, user)
    return cs


def _addresses(host: Host) -> list[str]:
    return [c.split("/")[0] for link in Link.objects.filter(host=host) for c in link.cidrs]


def _apply_start(cs: ChangeSet, user) -> Operation:
    cs.status = ChangeStatus.APPLYING
    cs.operation = operation_start(
        kind="tuning.apply", target=_target(cs.host), host=cs.host, user=user, params={"change_set": cs.pk}
    )
    cs.save(update_fields=["status", "operation"])
    return cs.operation


def _measure(cs: ChangeSet, tracker: Tracker, label: str) -> dict:
    """iperf3 both ways between the peer and the tuned host: 'to' (peer sends) and 'from' (the host sends)."""
    seconds = settings.TARN_TUNING_MEASURE_SECONDS
    server = transport_for(cs.host, operation=tracker.op)
    client = transport_for(cs.measure_peer, operation=tracker.op)
    results = {}
    for direction, reverse in (("to_host", False), ("from_host", True)):
        tracker.log(f"iperf3 {label}: {cs.measure_peer.name} {'←' if reverse else '→'} {cs.host.name}, {seconds} s")
        r = iperf.measure(server, client, cs.measure_address, seconds=seconds, reverse=reverse, tag=str(tracker.op.pk))
        results[direction] = r.as_dict()
    return results


def _persist_kernel(t: Transport, host: Host) -> None:
    """Tarn's files hold every active setting of the host (sysctl.d read at boot, modprobe.d at module load)."""
    active = Setting.objects.filter(host=host, active=True)
    t.write_file(kernel.SYSCTL_FILE, kernel.render_sysctl({s.key: s.value for s in active if s.kind == "sysctl"}))
    t.write_file(kernel.MODPROBE_FILE, kernel.render_modprobe({s.key: s.value for s in active if s.kind == "zfs"}))


@operation_runner("tuning.apply")
def tuning_apply_run(tracker: Tracker) -> None:
    cs = ChangeSet.objects.get(pk=tracker.op.params["change_set"])
    t = transport_for(cs.host, user=tracker.op.user, operation=tracker.op)
    try:
        if cs.measure:
            tracker.progress(5, "Measuring before")
            cs.before = _measure(cs, tracker, "before")
            cs.save(update_fields=["before"])
        planned = list(cs.settings.filter(action=Action.SET))
        for i, s in enumerate(planned, 1):
            tracker.progress(30 + 40 * i // max(len(planned), 1), f"{s.key} = {s.value}")
            now = kernel.read(t, s.kind, [s.key]).get(s.key)
            if now is None or (now != s.original and now != s.value):
                s.action, s.note = Action.SKIP, f"Changed since the plan (now {now}); left alone."
                s.save(update_fields=["action", "note"])
                continue
            kernel.write(t, s.kind, s.key, s.value)
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
    except HostError as exc:
        _end(cs, ChangeStatus.FAILED, str(exc))
        raise
    worse = [d for d, ratio in cs.effect.items() if ratio < 0.95]
    if worse and cs.revert_if_worse:
        _revert(t, cs, list(cs.settings.filter(active=True)))
        _end(cs, ChangeStatus.REVERTED, f"Reverted: slower after ({', '.join(worse)}).")
        tracker.progress(100, cs.message)
        return
    _end(cs, ChangeStatus.APPLIED, "Slower after: consider reverting." if worse else "")
    changed = cs.settings.filter(active=True).count()
    tracker.progress(100, f"Applied {changed} setting{'s' * (changed != 1)}." + (" " + cs.message if worse else ""))


def tuning_revert_start(*, host: Host, user, change_set: ChangeSet | None = None, setting: Setting | None = None):
    """Put back the original values of a change set's active settings, or of one setting."""
    scope = [setting] if setting else list(change_set.settings.filter(active=True))
    scope = [s for s in scope if s and s.active and s.host_id == host.pk]
    if not scope:
        raise ValidationError({"change_set": "Nothing of this change is in effect any more."})
    return operation_start(
        kind="tuning.revert", target=_target(host), host=host, user=user,
        params={"settings": [s.pk for s in scope], "change_set": change_set.pk if change_set else None},
    )  # fmt: skip


def _revert(t: Transport, cs: ChangeSet | None, scope: list[Setting]) -> None:
    host = scope[0].host
    for s in scope:
        kernel.write(t, s.kind, s.key, s.original)
        Setting.objects.filter(pk=s.pk).update(active=False, reverted_at=timezone.now())
    _persist_kernel(t, host)
    kernel_refresh(host=host, t=t)


@operation_runner("tuning.revert")
def tuning_revert_run(tracker: Tracker) -> None:
    scope = list(Setting.objects.filter(pk__in=tracker.op.params["settings"], active=True))
    if not scope:
        tracker.progress(100, "Nothing left to revert.")
        return
    t = transport_for(tracker.op.host, user=tracker.op.user, operation=tracker.op)
    tracker.progress(30, f"Putting back {len(scope)} original value{'s' * (len(scope) != 1)}")
    _revert(t, None, scope)
    for cs in ChangeSet.objects.filter(pk__in={s.change_set_id for s in scope}):
        if not cs.settings.filter(active=True).exists():
            _end(cs, ChangeStatus.REVERTED, "Every original value is back.")
    tracker.progress(100, f"Reverted {', '.join(s.key for s in scope)}.")


def drift_start(*, host: Host, user, setting: Setting, action: str) -> Operation | None:
    """A setting that no longer matches what Tarn applied: re-apply it, or forget it (Tarn stops keeping it)."""
    if not setting.active or setting.host_id != host.pk:
        raise ValidationError({"setting": "Tarn does not keep that setting any more."})
    if action == "forget":
        with transaction.atomic():
            Setting.objects.filter(pk=setting.pk).update(active=False, note="Forgotten after it drifted.")
            return operation_start(kind="tuning.persist", target=_target(host), host=host, user=user)
    if action != "reapply":
        raise ValidationError({"action": "Re-apply or forget."})
    return operation_start(
        kind="tuning.reapply", target=_target(host), host=host, user=user, params={"settings": [setting.pk]}
    )


@operation_runner("tuning.reapply", "tuning.persist")
def tuning_reapply_run(tracker: Tracker) -> None:
    host = tracker.op.host
    t = transport_for(host, user=tracker.op.user, operation=tracker.op)
    for s in Setting.objects.filter(pk__in=tracker.op.params.get("settings", []), active=True):
        kernel.write(t, s.kind, s.key, s.value)
    _persist_kernel(t, host)
    kernel_refresh(host=host, t=t)
    tracker.progress(100, "Tarn's settings and files match again.")


# --- network: MTU and bridges, with the restore armed on the host ---------------------------------------------------
def _network_start(host: Host, user, *, kind: str, title: str, links: list[str], target: dict, seconds: int):
    if not ROLLBACK_SECONDS_MIN <= seconds <= ROLLBACK_SECONDS_MAX:
        raise ValidationError({"seconds": f"Between {ROLLBACK_SECONDS_MIN} and {ROLLBACK_SECONDS_MAX} seconds."})
    if ChangeSet.objects.filter(host=host, status=ChangeStatus.PENDING).exists():
        raise ValidationError({"links": "A network change is waiting for Keep or its rollback: finish that first."})
    with transaction.atomic():
        cs = ChangeSet.objects.create(
            host=host, kind=kind, title=title, links=links, target={**target, "seconds": seconds},
            created_by=user, status=ChangeStatus.APPLYING,
        )  # fmt: skip
        cs.operation = operation_start(
            kind="tuning.network", target=_target(host), host=host, user=user, params={"change_set": cs.pk}
        )
        cs.save(update_fields=["operation"])
    return cs


def _link(host: Host, name: str, field: str = "link") -> Link:
    try:
        net.check_ifname(name)
    except ValueError as exc:
        raise ValidationError({field: str(exc)}) from None
    link = Link.objects.filter(host=host, name=name).first()
    if link is None:
        raise ValidationError({field: f"{host.name} has no link {name}."})
    return link


def link_mtu_start(*, host: Host, user, link: str, mtu: int, peers: list[str], seconds: int) -> ChangeSet:
    """Set a link's MTU. peers: addresses the new MTU must reach unfragmented (ping -M do) before it may stay."""
    name = link
    link = _link(host, name)
    low, high = link.min_mtu or 68, link.max_mtu or 65535
    if not low <= mtu <= high:
        raise ValidationError({"mtu": f"{name} takes an MTU from {low} to {high}."})
    if link.master:
        raise ValidationError({"link": f"{name} is a port of {link.master}: set the MTU on {link.master}."})
    ports = list(Link.objects.filter(host=host, master=name))
    return _network_start(
        host, user, kind=ChangeKind.MTU, title=f"MTU {mtu} on {name}", links=[name, *(p.name for p in ports)],
        target={"link": name, "mtu": mtu, "peers": peers}, seconds=seconds,
    )  # fmt: skip


def bridge_create_start(*, host: Host, user, name: str, ports: list[str], seconds: int, management_ok=False):
    try:
        net.check_ifname(name)
    except ValueError as exc:
        raise ValidationError({"name": str(exc)}) from None
    if Link.objects.filter(host=host, name=name).exists():
        raise ValidationError({"name": f"{host.name} has a link named {name} already."})
    if not ports:
        raise ValidationError({"ports": "Choose the links to bridge."})
    rows = [_link(host, p, "ports") for p in ports]
    bad = [r.name for r in rows if r.kind != "ether" or r.master]
    if bad:
        raise ValidationError({"ports": f"Only NICs that are in no bridge yet: not {', '.join(bad)}."})
    taken = [r.name for r in rows if r.management]
    if taken and not management_ok:
        raise ValidationError(
            {"management_ok": f"{', '.join(taken)} carries the management connection: confirm to bridge it."}
        )
    return _network_start(
        host, user, kind=ChangeKind.BRIDGE, title=f"Bridge {name} over {', '.join(ports)}", links=[name, *ports],
        target={"bridge": name, "ports": ports, "management_ok": management_ok}, seconds=seconds,
    )  # fmt: skip


def bridge_delete_start(*, host: Host, user, name: str, confirm: str, seconds: int) -> ChangeSet:
    link = _link(host, name, "name")
    if link.kind != "bridge":
        raise ValidationError({"name": f"{name} is not a bridge."})
    if confirm != name:
        raise ValidationError({"confirm": f"Type the bridge's name ({name}) to delete it."})
    ports = list(Link.objects.filter(host=host, master=name).values_list("name", flat=True))
    return _network_start(
        host, user, kind=ChangeKind.UNBRIDGE, title=f"Delete bridge {name}", links=[name, *ports],
        target={"bridge": name, "ports": ports}, seconds=seconds,
    )  # fmt: skip


def _lines(cs: ChangeSet, live: dict[str, net.Link], management: set[str]) -> tuple[list[str], list[str]]:
    target = cs.target
    if cs.kind == ChangeKind.MTU:
        link = live.get(target["link"])
        if link is None:
            raise HostError(f"{target['link']} is gone from the host.")
        net.check_mtu(link, target["mtu"])
        ports = [p for p in live.values() if p.master == link.name]
        apply, restore = [], []
        for x in [*ports, link]:  # ports first: a bridge's MTU cannot exceed its ports'
            a, r = net.mtu_lines(x, target["mtu"])
            apply, restore = apply + a, r + restore
        return apply, restore
    if cs.kind == ChangeKind.BRIDGE:
        ports = [live.get(p) for p in target["ports"]]
        if None in ports:
            raise HostError("A chosen port is gone from the host.")
        if target["bridge"] in live:
            raise HostError(f"{target['bridge']} exists already.")
        taken = management & set(target["ports"])
        if taken and not target.get("management_ok"):
            raise HostError(f"{', '.join(sorted(taken))} carries the management connection: confirm to bridge it.")
        return net.bridge_lines(target["bridge"], ports)
    bridge = live.get(target["bridge"])
    if bridge is None:
        raise HostError(f"{target['bridge']} is gone from the host.")
    return net.unbridge_lines(bridge, [p for p in live.values() if p.master == bridge.name])


@operation_runner("tuning.network")
def tuning_network_run(tracker: Tracker) -> None:
    """Arm the restore on the host, apply, check the host still answers and the path carries the MTU; then wait
    for Keep (the countdown runs on the host)."""
    cs = ChangeSet.objects.get(pk=tracker.op.params["change_set"])
    host = cs.host
    t = transport_for(host, user=tracker.op.user, operation=tracker.op)
    try:
        tracker.progress(10, "Reading the links")
        observed = net.read_links(t, details=False)
        live = {x.name: x for x in observed}
        apply, restore = _lines(cs, live, net.management_links(t, observed))
    except (HostError, ValueError) as exc:
        _end(cs, ChangeStatus.FAILED, str(exc))
        raise HostError(str(exc)) from None
    seconds = cs.target["seconds"]
    unit = f"tarn-restore-{cs.pk}"
    restore_path = f"{RUN_DIR}/restore-{cs.pk}.ip"
    cs.apply_lines, cs.restore_lines, cs.restore_unit = apply, restore, unit
    cs.deadline = timezone.now() + timedelta(seconds=seconds)
    cs.save(update_fields=["apply_lines", "restore_lines", "restore_unit", "deadline"])
    tracker.progress(25, f"Arming the restore on {host.name} ({seconds} s)")
    t.write_file(restore_path, "".join(line + "\n" for line in restore), mode=0o600)
    systemd.arm(
        t, unit, seconds, ["ip", "-force", "-batch", restore_path],
        description=f"Tarn: undo change {cs.pk} ({cs.title}) unless kept", log=f"{RUN_DIR}/restore-{cs.pk}.log",
    )  # fmt: skip
    tracker.progress(45, "Applying")
    try:
        net.run_batch(t, f"{RUN_DIR}/apply-{cs.pk}.ip", apply)
        t.run(["true"], timeout=15)
        problem = _path_problem(t, cs)
    except HostUnreachable as exc:
        _end(cs, ChangeStatus.PENDING, f"Lost the connection after applying ({exc}); {host.name} restores itself.")
        tracker.progress(100, cs.message)
        return
    except HostError as exc:
        problem = f"Could not apply: {exc}"
    if problem:
        _restore_now(t, cs, unit, restore_path)
        links_refresh(host=host, t=t)
        _end(cs, ChangeStatus.FAILED, f"{problem} The original settings are back.")
        raise HostError(cs.message)
    links_refresh(host=host, t=t)
    _end(cs, ChangeStatus.PENDING)
    tracker.progress(100, f"Applied. Keep it within {seconds} s or {host.name} puts the old settings back.")


def _path_problem(t: Transport, cs: ChangeSet) -> str:
    """With a jumbo (or any larger) MTU and peers named: each must answer a DF ping of the full size."""
    for peer in cs.target.get("peers") or []:
        ok, summary = net.ping_df(t, peer, cs.target["mtu"])
        if not ok:
            return f"The path to {peer} does not carry MTU {cs.target['mtu']} unfragmented ({summary})."
    return ""


def _restore_now(t: Transport, cs: ChangeSet, unit: str, restore_path: str) -> None:
    if systemd.disarm(t, unit):
        t.run(["ip", "-force", "-batch", restore_path], mutating=True, check=False, timeout=60)


def change_keep_start(*, change_set: ChangeSet, user) -> Operation:
    cs = change_set
    if cs.status != ChangeStatus.PENDING:
        raise ValidationError({"change_set": "This change is not waiting for Keep."})
    if cs.deadline and cs.deadline <= timezone.now():
        raise ValidationError({"change_set": "Too late: the host has put the original settings back."})
    return operation_start(
        kind="tuning.keep", target=f"{_target(cs.host)}:keep", host=cs.host, user=user, params={"change_set": cs.pk}
    )


@operation_runner("tuning.keep")
def tuning_keep_run(tracker: Tracker) -> None:
    """Disarm the restore first; if it already fired, the change is gone and nothing is written."""
    cs = ChangeSet.objects.get(pk=tracker.op.params["change_set"])
    t = transport_for(cs.host, user=tracker.op.user, operation=tracker.op)
    if not systemd.disarm(t, cs.restore_unit):
        links_refresh(host=cs.host, t=t)
        _end(cs, ChangeStatus.ROLLED_BACK, "Too late: the host had put the original settings back.")
        raise HostError(cs.message)
    tracker.progress(50, "Writing the network configuration for reboots")
    links = links_refresh(host=cs.host, t=t)
    managed = set(Link.objects.filter(host=cs.host, managed=True).values_list("name", flat=True))
    managed = (managed | set(cs.links)) - ({cs.target["bridge"]} if cs.kind == ChangeKind.UNBRIDGE else set())
    _persist_network(t, cs.host, {x.name for x in links} & managed)
    _end(cs, ChangeStatus.KEPT)
    tracker.progress(100, "Kept; it survives a reboot.")


def _persist_network(t: Transport, host: Host, names: set[str]) -> None:
    observed = {x.name: x for x in net.read_links(t, details=False)}
    keep = [observed[n] for n in sorted(names) if n in observed and observed[n].kind in ("ether", "bridge")]
    files = net.render_networkd(keep)
    for path in set(net.tarn_networkd_files(t)) - set(files):
        t.remove_file(path)
    for path, text in files.items():
        t.write_file(path, text)
    t.run(["networkctl", "reload"], mutating=True, timeout=60)
    Link.objects.filter(host=host).update(managed=False)
    Link.objects.filter(host=host, name__in=[x.name for x in keep]).update(managed=True)


def changes_settle() -> int:
    """Beat: a pending network change past its deadline was undone by the host; say so and re-read its links."""
    due = ChangeSet.objects.filter(status=ChangeStatus.PENDING, deadline__lt=timezone.now() - timedelta(seconds=5))
    for cs in due:
        _end(cs, ChangeStatus.ROLLED_BACK, "Not kept in time: the host put the original settings back.")
        try:
            tuning_refresh_start(host=cs.host, user=None)
        except TargetBusy:
            pass  # a refresh is on its way already
    return len(due)


def tuning_refresh_start(*, host: Host, user) -> Operation:
    return operation_start(kind="tuning.refresh", target=f"{_target(host)}:refresh", host=host, user=user)


@operation_runner("tuning.refresh")
def tuning_refresh_run(tracker: Tracker) -> None:
    tracker.progress(20, "Reading links and kernel values")
    tuning_refresh(host=tracker.op.host, operation=tracker.op)
    tracker.progress(100, "Links and kernel values read.")
