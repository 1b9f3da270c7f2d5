"""Network changes (MTU, bridges): the restore is armed on the host as a transient timer before anything
changes, so a change that cuts the link heals itself; Keep disarms it and writes the systemd-networkd files that
make it survive a reboot."""

import time
from datetime import timedelta

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from appliance.checks import confirmed
from appliance.models import Host, Operation
from appliance.operations import TargetBusy, Tracker, operation_runner, operation_start
from hostlib import facts, net, systemd
from hostlib.errors import HostError, HostUnreachable
from hostlib.runner import Transport
from tuning.choices import ROLLBACK_SECONDS_MAX, ROLLBACK_SECONDS_MIN, ChangeKind, ChangeStatus
from tuning.models import ChangeSet, Link
from tuning.services.common import TUNING, change_end
from tuning.services.inventory import links_refresh, tuning_refresh_start

RUN_DIR = "/run/tarn"


def _network_start(host: Host, user, *, kind: str, title: str, links: list[str], target: dict, seconds: int):
    if not ROLLBACK_SECONDS_MIN <= seconds <= ROLLBACK_SECONDS_MAX:
        raise ValidationError({"seconds": f"Between {ROLLBACK_SECONDS_MIN} and {ROLLBACK_SECONDS_MAX} seconds."})
    if ChangeSet.objects.filter(host=host, status=ChangeStatus.PENDING).exists():
        raise ValidationError({"links": "A network change is waiting for Keep or its rollback: finish that first."})
    with transaction.atomic():
        cs = ChangeSet.objects.create(
            host=host,
            kind=kind,
            title=title,
            links=links,
            target={**target, "seconds": seconds},
            created_by=user,
            status=ChangeStatus.APPLYING,
        )
        cs.operation = operation_start(kind="tuning.network", host=host, user=user, params={"change_set": cs.pk})
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
    """Set a link's MTU (a NIC, bond, VLAN or bridge). peers: addresses the new MTU must reach unfragmented
    (ping -M do) before it may stay."""
    name = link
    link = _link(host, name)
    if link.kind not in net.TUNABLE_KINDS:
        raise ValidationError(
            {"link": f"{name} is a {link.kind} link: Tarn sets the MTU of NICs, bonds, VLANs and bridges only."}
        )
    low, high = link.min_mtu or 68, link.max_mtu or 65535
    if not low <= mtu <= high:
        raise ValidationError({"mtu": f"{name} takes an MTU from {low} to {high}."})
    if link.master:
        raise ValidationError({"link": f"{name} is a port of {link.master}: set the MTU on {link.master}."})
    ports = list(Link.objects.filter(host=host, master=name))
    if mtu < net.IPV6_MIN_MTU and any(a.get("family") == "inet6" for x in (link, *ports) for a in x.addresses):
        raise ValidationError(
            {
                "mtu": f"{name} carries IPv6, which needs an MTU of at least {net.IPV6_MIN_MTU} (below it the kernel "
                "takes the link's IPv6 addresses away)."
            }
        )
    try:
        peers = [net.check_address(p) for p in peers]
    except ValueError as exc:
        raise ValidationError({"peers": str(exc)}) from None
    return _network_start(
        host,
        user,
        kind=ChangeKind.MTU,
        title=f"MTU {mtu} on {name}",
        links=[name, *(p.name for p in ports)],
        target={"link": name, "mtu": mtu, "peers": peers},
        seconds=seconds,
    )


def bridge_create_start(*, host: Host, user, name: str, ports: list[str], seconds: int, management_ok=False):
    try:
        net.check_ifname(name)
    except ValueError as exc:
        raise ValidationError({"name": str(exc)}) from None
    if Link.objects.filter(host=host, name=name).exists():
        raise ValidationError({"name": f"{host.name} has a link named {name} already."})
    if not ports:
        raise ValidationError({"ports": "Choose the links to bridge."})
    twice = sorted({p for p in ports if ports.count(p) > 1})
    if twice:
        raise ValidationError({"ports": f"Name each port once: {', '.join(twice)} is named more than once."})
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
        host,
        user,
        kind=ChangeKind.BRIDGE,
        title=f"Bridge {name} over {', '.join(ports)}",
        links=[name, *ports],
        target={"bridge": name, "ports": ports, "management_ok": management_ok},
        seconds=seconds,
    )


def bridge_delete_start(*, host: Host, user, name: str, confirm: str, seconds: int) -> ChangeSet:
    link = _link(host, name, "name")
    if link.kind != "bridge":
        raise ValidationError({"name": f"{name} is not a bridge."})
    confirmed(confirm, name, f"Type the bridge's name ({name}) to delete it.")
    ports = list(Link.objects.filter(host=host, master=name).values_list("name", flat=True))
    return _network_start(
        host,
        user,
        kind=ChangeKind.UNBRIDGE,
        title=f"Delete bridge {name}",
        links=[name, *ports],
        target={"bridge": name, "ports": ports},
        seconds=seconds,
    )


def network_revert_start(*, change_set: ChangeSet, user) -> ChangeSet:
    """Undo a kept network change the same way it was made: a new change with its own armed restore and Keep."""
    cs, host = change_set, change_set.host
    if cs.status != ChangeStatus.KEPT:
        raise ValidationError({"change_set": "Only a kept network change can be reverted."})
    seconds, target = cs.target.get("seconds", 60), cs.target
    if cs.kind == ChangeKind.MTU:
        new = link_mtu_start(
            host=host, user=user, link=target["link"], mtu=target["original_mtu"], peers=[], seconds=seconds
        )
    elif cs.kind == ChangeKind.BRIDGE:
        name = target["bridge"]
        new = bridge_delete_start(host=host, user=user, name=name, confirm=name, seconds=seconds)
    else:
        new = bridge_create_start(
            host=host, user=user, name=target["bridge"], ports=target["ports"], seconds=seconds, management_ok=True
        )
    new.title = f"Revert: {cs.title}"
    new.target = {**new.target, "reverts": cs.pk}
    new.save(update_fields=["title", "target"])
    return new


def _lines(cs: ChangeSet, live: dict[str, net.Link], management: set[str]) -> tuple[list[str], list[str]]:
    target = cs.target
    if cs.kind == ChangeKind.MTU:
        link = live.get(target["link"])
        if link is None:
            raise HostError(f"{target['link']} is gone from the host.")
        ports = _ports(live, link.name)
        net.check_mtu(link, target["mtu"], ports)
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
    return net.unbridge_lines(bridge, _ports(live, bridge.name))


def _ports(live: dict[str, net.Link], bridge: str) -> list[net.Link]:
    return [p for p in live.values() if p.master == bridge]


def _involved(cs: ChangeSet, live: dict[str, net.Link]) -> set[str]:
    """The links a change touches: the link and its ports (MTU), the new bridge's ports, the bridge and its ports."""
    if cs.kind == ChangeKind.BRIDGE:
        names = set(cs.target["ports"])
    else:
        names = {cs.target["link"] if cs.kind == ChangeKind.MTU else cs.target["bridge"]}
        names |= {x.name for x in live.values() if x.master in names}
    return {n for n in names if n in live}


@operation_runner("tuning.network", lock=TUNING)
def tuning_network_run(tracker: Tracker) -> None:
    """Arm the restore on the host, apply, check the host still answers and the path carries the MTU; then wait
    for Keep (the countdown runs on the host)."""
    cs = ChangeSet.objects.get(pk=tracker.op.params["change_set"])
    host = cs.host
    t = tracker.transport()
    try:
        tracker.progress(10, "Reading the links")
        observed = net.read_links(t, details=False)
        live = {x.name: x for x in observed}
        apply, restore = _lines(cs, live, net.management_links(t, observed))
        involved = _involved(cs, live)  # and then their addresses and routes as they are now, whatever the change did
        restore += net.state_lines([live[n] for n in involved], net.read_routes(t, involved))
    except (HostError, ValueError) as exc:
        change_end(cs, ChangeStatus.FAILED, str(exc))
        raise HostError(str(exc)) from None
    if cs.kind == ChangeKind.MTU:
        cs.target["original_mtu"] = live[cs.target["link"]].mtu  # what a later revert goes back to
    if cs.kind == ChangeKind.UNBRIDGE:  # what Keep writes for the port even if networkd drops it meanwhile
        bridge = live[cs.target["bridge"]]
        home, moved = net.unbridge_moves(bridge, _ports(live, bridge.name))
        if moved:
            cs.target["moved"] = {"link": home, "addresses": moved}
    seconds = cs.target["seconds"]
    unit = f"tarn-restore-{cs.pk}"
    restore_path = _restore_path(cs)
    cs.apply_lines, cs.restore_lines, cs.restore_unit = apply, restore, unit
    cs.deadline = timezone.now() + timedelta(seconds=seconds)
    cs.save(update_fields=["apply_lines", "restore_lines", "restore_unit", "deadline", "target"])
    tracker.progress(25, f"Arming the restore on {host.name} ({seconds} s)")
    t.write_file(restore_path, "".join(line + "\n" for line in restore), mode=0o600)
    _arm_restore(t, cs, unit, seconds)
    tracker.progress(45, "Applying")
    try:
        net.run_batch(t, f"{RUN_DIR}/apply-{cs.pk}.ip", apply)
        facts.reachable(t)
        problem = _path_problem(t, cs)
    except HostUnreachable as exc:
        change_end(
            cs, ChangeStatus.PENDING, f"Lost the connection after applying ({exc}); {host.name} restores itself."
        )
        tracker.progress(100, cs.message)
        return
    except HostError as exc:
        problem = f"Could not apply: {exc}"
    if problem:
        _restore_now(t, cs, unit, restore_path)
        links_refresh(host=host, t=t)
        change_end(cs, ChangeStatus.FAILED, f"{problem} The original settings are back.")
        raise HostError(cs.message)
    links_refresh(host=host, t=t)
    change_end(cs, ChangeStatus.PENDING)
    tracker.progress(100, f"Applied. Keep it within {seconds} s or {host.name} puts the old settings back.")


def _path_problem(t: Transport, cs: ChangeSet) -> str:
    """With a jumbo (or any larger) MTU and peers named: each must answer a DF ping of the full size."""
    for peer in cs.target.get("peers") or []:
        ok, summary = net.ping_df(t, peer, cs.target["mtu"])
        if not ok:
            return f"The path to {peer} does not carry MTU {cs.target['mtu']} unfragmented ({summary})."
    return ""


def _restore_path(cs: ChangeSet) -> str:
    """Where a change's restore script lives on the host: written before the change, run by its armed timer."""
    return f"{RUN_DIR}/restore-{cs.pk}.ip"


def _arm_restore(t: Transport, cs: ChangeSet, unit: str, seconds: int) -> None:
    """The host runs the change's restore script in `seconds` unless the timer is stopped (Keep)."""
    systemd.arm(
        t,
        unit,
        seconds,
        net.restore_argv(_restore_path(cs)),
        description=f"Tarn: undo change {cs.pk} ({cs.title}) unless kept",
        log=f"{RUN_DIR}/restore-{cs.pk}.log",
    )


KEEP_RETRY_SECONDS = 60  # after a Keep that failed past disarming: the restore armed again, for this long


def _restore_now(t: Transport, cs: ChangeSet, unit: str, restore_path: str) -> None:
    if systemd.disarm(t, unit):
        net.restore_batch(t, restore_path)


def change_keep_start(*, change_set: ChangeSet, user) -> Operation:
    cs = change_set
    if cs.status != ChangeStatus.PENDING:
        raise ValidationError({"change_set": "This change is not waiting for Keep."})
    if cs.deadline and cs.deadline <= timezone.now():
        raise ValidationError({"change_set": "Too late: the host has put the original settings back."})
    return operation_start(
        kind="tuning.keep",
        host=cs.host,
        user=user,
        params={"change_set": cs.pk},
    )


@operation_runner("tuning.keep", lock=f"{TUNING}:keep")
def tuning_keep_run(tracker: Tracker) -> None:
    """Disarm the restore first; if it already fired, the change is gone and nothing is written."""
    cs = ChangeSet.objects.get(pk=tracker.op.params["change_set"])
    t = tracker.transport()
    if not cs.target.get("disarmed"):  # a Keep that failed after disarming left no timer to stop
        if not systemd.disarm(t, cs.restore_unit):
            links_refresh(host=cs.host, t=t)
            change_end(cs, ChangeStatus.ROLLED_BACK, "Too late: the host had put the original settings back.")
            raise HostError(cs.message)
        cs.target = {**cs.target, "disarmed": True}
        cs.save(update_fields=["target"])
    tracker.progress(50, "Writing the network configuration for reboots")
    try:
        links = links_refresh(host=cs.host, t=t)
        managed = set(Link.objects.filter(host=cs.host, managed=True).values_list("name", flat=True))
        managed = (managed | set(cs.links)) - ({cs.target["bridge"]} if cs.kind == ChangeKind.UNBRIDGE else set())
        _persist_network(t, cs.host, {x.name for x in links} & managed, moved=cs.target.get("moved"))
    except (HostError, ValueError) as exc:
        _keep_failed(t, cs, exc)
        raise HostError(cs.message) from None
    change_end(cs, ChangeStatus.KEPT)
    if cs.target.get("reverts"):
        ChangeSet.objects.filter(pk=cs.target["reverts"]).update(
            status=ChangeStatus.REVERTED, message=f"Undone by change {cs.pk}.", ended_at=timezone.now()
        )
    tracker.progress(100, "Kept; it survives a reboot.")


def _keep_failed(t: Transport, cs: ChangeSet, exc: Exception) -> None:
    """The timer is stopped but the change could not be written for reboots: arm the restore again (a new unit),
    so the host still puts the old settings back unless a later Keep succeeds. If even that fails, the change is
    live with no countdown: it says so, and neither the beat nor a later Keep calls it rolled back."""
    unit = f"tarn-restore-{cs.pk}-{int(time.time())}"
    try:
        _arm_restore(t, cs, unit, KEEP_RETRY_SECONDS)
    except HostError:
        cs.deadline = None
        cs.message = (
            f"Keep failed ({exc}) and the restore could not be armed again: the change is live on {cs.host.name} "
            "but not kept for reboots. Keep it again, or revert it."
        )
        cs.save(update_fields=["deadline", "message"])
        return
    cs.restore_unit, cs.deadline = unit, timezone.now() + timedelta(seconds=KEEP_RETRY_SECONDS)
    cs.target = {**cs.target, "disarmed": False}
    cs.message = (
        f"Keep failed ({exc}); the restore is armed again: {cs.host.name} puts the original settings back in "
        f"{KEEP_RETRY_SECONDS} s unless Keep succeeds."
    )
    cs.save(update_fields=["restore_unit", "deadline", "target", "message"])


def _persist_network(t: Transport, host: Host, names: set[str], moved: dict | None = None) -> None:
    """Tarn's networkd files for the links as they are, plus the addresses a bridge delete moved to its port: while
    the delete is armed, networkd configures the port from its old file (a bridge port, no address) and may drop
    the address Tarn moved there (seen in the lab); Keep writes it back and networkd puts it on again."""
    observed = {x.name: x for x in net.read_links(t, details=False)}
    home = observed.get((moved or {}).get("link", ""))
    if home is not None:
        have = {a.cidr for a in home.addresses}
        home.addresses += [net.static_address(cidr) for cidr in moved["addresses"] if cidr not in have]
    keep = [observed[n] for n in sorted(names) if n in observed and observed[n].kind in ("ether", "bridge")]
    files = net.render_networkd(keep)
    for path in set(net.tarn_networkd_files(t)) - set(files):
        t.remove_file(path)
    for path, text in files.items():
        t.write_file(path, text)
    net.networkd_reload(t, keep)
    Link.objects.filter(host=host).update(managed=False)
    Link.objects.filter(host=host, name__in=[x.name for x in keep]).update(managed=True)


def changes_settle() -> int:
    """Beat: a pending network change past its deadline was undone by the host; say so and re-read its links."""
    due = ChangeSet.objects.filter(status=ChangeStatus.PENDING, deadline__lt=timezone.now() - timedelta(seconds=5))
    for cs in due:
        change_end(cs, ChangeStatus.ROLLED_BACK, "Not kept in time: the host put the original settings back.")
        try:
            tuning_refresh_start(host=cs.host, user=None)
        except TargetBusy:
            pass  # a refresh is on its way already
    return len(due)
