"""The path every network change runs (MTU, bridges, bonds, VLANs): the restore is armed on the host as a transient
timer before anything changes, so a change that cuts the link heals itself; a bond's or VLAN's links are held from
networkd meanwhile; Keep disarms it and writes the systemd-networkd files that make it survive a reboot. The changes
themselves are started in links.py."""

import time
from datetime import timedelta

from django.core.exceptions import ValidationError
from django.utils import timezone

from appliance.models import Host, Operation
from appliance.operations import TargetBusy, Tracker, operation_runner, operation_start
from hostlib import facts, net, systemd
from hostlib.errors import HostError, HostUnreachable
from hostlib.runner import Transport
from tuning.choices import HELD_KINDS, ChangeKind, ChangeStatus
from tuning.models import ChangeSet, Link
from tuning.services.common import TUNING, change_end
from tuning.services.inventory import links_refresh, tuning_refresh_start

RUN_DIR = "/run/tarn"


def _lines(cs: ChangeSet, live: dict[str, net.Link], management: set[str]) -> tuple[list[str], list[str]]:
    """The change's `ip -batch` lines and their inverse, from the links as the host has them now (every name the
    change set holds is checked against them again: the page's view may be old)."""
    target, kind = cs.target, cs.kind
    if kind == ChangeKind.MTU:
        link = _live(live, target["link"])
        ports = _ports(live, link.name)
        net.check_mtu(link, target["mtu"], ports)
        vlans = [x for x in live.values() if x.kind == "vlan" and x.parent == link.name]
        lower = [] if link.kind == "bond" else ports  # a bond gives its ports its MTU itself
        return net.stack_mtu_lines(link, lower, vlans, target["mtu"])
    if kind == ChangeKind.BRIDGE:
        ports = [_live(live, p) for p in target["ports"]]
        _absent(live, target["bridge"])
        taken = management & set(target["ports"])
        if taken and not target.get("management_ok"):
            raise HostError(f"{', '.join(sorted(taken))} carries the management connection: confirm to bridge it.")
        return net.bridge_lines(target["bridge"], ports)
    if kind == ChangeKind.UNBRIDGE:
        bridge = _live(live, target["bridge"])
        return net.unbridge_lines(bridge, _ports(live, bridge.name))
    if kind == ChangeKind.BOND:
        ports = [_live(live, p) for p in target["ports"]]
        _absent(live, target["bond"])
        _free(live, ports, management)
        options = net.BondOptions(**target["options"])
        return net.bond_lines(target["bond"], ports, options)
    if kind == ChangeKind.UNBOND:
        bond = _live(live, target["bond"])
        if bond.kind != "bond" or bond.name in management:
            raise HostError(f"{bond.name} is not a bond Tarn may delete (a {bond.kind}, or the management link).")
        return net.unbond_lines(bond, _ports(live, bond.name))
    if kind == ChangeKind.VLAN:
        parent = _live(live, target["link"])
        _absent(live, target["vlan"])
        if parent.master:
            raise HostError(f"{parent.name} is a port of {parent.master} now.")
        return net.vlan_lines(parent, target["vid"], target["vlan"], target["addresses"])
    vlan = _live(live, target["vlan"])
    if vlan.kind != "vlan" or vlan.name in management:
        raise HostError(f"{vlan.name} is not a VLAN Tarn may delete (a {vlan.kind}, or the management link).")
    return net.unvlan_lines(vlan)


def _live(live: dict[str, net.Link], name: str) -> net.Link:
    if name not in live:
        raise HostError(f"{name} is gone from the host.")
    return live[name]


def _absent(live: dict[str, net.Link], name: str) -> None:
    if name in live:
        raise HostError(f"{name} exists already.")


def _free(live: dict[str, net.Link], ports: list[net.Link], management: set[str]) -> None:
    for port in ports:
        if port.kind != "ether" or port.master or port.name in management:
            raise HostError(f"{port.name} is not a free data NIC now (a {port.kind}, a port, or the management link).")
        if any(x.kind == "vlan" and x.parent == port.name for x in live.values()):
            raise HostError(f"{port.name} carries a VLAN now.")


def _ports(live: dict[str, net.Link], master: str) -> list[net.Link]:
    return [p for p in live.values() if p.master == master]


def _involved(cs: ChangeSet, live: dict[str, net.Link]) -> set[str]:
    """The links whose addresses and routes the restore puts back as they are now: the link and its ports (MTU), the
    new bridge's or bond's ports, the bridge or bond and its ports, the VLAN deleted and its parent."""
    target = cs.target
    if cs.kind in (ChangeKind.BRIDGE, ChangeKind.BOND):
        names = set(target["ports"])
    elif cs.kind in (ChangeKind.VLAN, ChangeKind.UNVLAN):
        names = {target["link"], target["vlan"]}
    else:
        names = {target.get("link") or target.get("bridge") or target.get("bond")}
        names |= {x.name for x in live.values() if x.master in names}
    return {n for n in names if n in live}


def _held(cs: ChangeSet, live: dict[str, net.Link]) -> list[str]:
    """The links networkd must leave alone while a bond or VLAN change waits: the bond and its ports, the VLAN."""
    if cs.kind in (ChangeKind.VLAN, ChangeKind.UNVLAN):
        return [cs.target["vlan"]]
    return [cs.target["bond"], *cs.target["ports"], *(x.name for x in live.values() if x.master == cs.target["bond"])]


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
    if cs.kind in HELD_KINDS:
        tracker.progress(35, "Keeping networkd off the links until the change is kept")
        try:
            held = net.hold(t, cs.pk, _held(cs, live))
        except HostError as exc:
            _restore_now(t, cs, unit, restore_path)
            change_end(cs, ChangeStatus.FAILED, f"Could not keep networkd off the links: {exc}. Nothing changed.")
            raise HostError(cs.message) from None
        cs.target["held"] = held
        cs.save(update_fields=["target"])
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
        _release(t, cs)
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


def _release(t: Transport, cs: ChangeSet) -> None:
    """networkd takes the held links back (after a restore: they are as its files say, and it renews DHCP)."""
    if cs.target.get("held"):
        try:
            net.release(t, cs.pk)
        except HostError:
            return  # the hold is in /run: it goes at the next reboot, and the next change's settle tries again
        cs.target = {**cs.target, "held": False}
        cs.save(update_fields=["target"])


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
            _release(t, cs)
            links_refresh(host=cs.host, t=t)
            change_end(cs, ChangeStatus.ROLLED_BACK, "Too late: the host had put the original settings back.")
            raise HostError(cs.message)
        cs.target = {**cs.target, "disarmed": True}
        cs.save(update_fields=["target"])
    tracker.progress(50, "Writing the network configuration for reboots")
    try:
        links = links_refresh(host=cs.host, t=t)
        managed = set(Link.objects.filter(host=cs.host, managed=True).values_list("name", flat=True))
        managed = (managed | set(cs.links)) - _gone(cs)
        held = cs.pk if cs.target.get("held") else None
        _persist_network(t, cs.host, {x.name for x in links} & managed, moved=cs.target.get("moved"), held=held)
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


def _gone(cs: ChangeSet) -> set[str]:
    """The link a kept change deleted (no file of Tarn's names it any more)."""
    deleted = {ChangeKind.UNBRIDGE: "bridge", ChangeKind.UNBOND: "bond", ChangeKind.UNVLAN: "vlan"}.get(cs.kind)
    return {cs.target[deleted]} if deleted else set()


def _persist_network(
    t: Transport, host: Host, names: set[str], moved: dict | None = None, held: int | None = None
) -> None:
    """Tarn's networkd files for the links as they are, plus the addresses a bridge delete moved to its port: while
    the delete is armed, networkd configures the port from its old file (a bridge port, no address) and may drop
    the address Tarn moved there (seen in the lab); Keep writes it back and networkd puts it on again."""
    observed = {x.name: x for x in net.read_links(t, details=False)}
    home = observed.get((moved or {}).get("link", ""))
    if home is not None:
        have = {a.cidr for a in home.addresses}
        home.addresses += [net.static_address(cidr) for cidr in moved["addresses"] if cidr not in have]
    keep = [observed[n] for n in sorted(names) if n in observed and observed[n].kind in net.TUNABLE_KINDS]
    files = net.render_networkd(keep)
    for path in set(net.tarn_networkd_files(t)) - set(files):
        t.remove_file(path)
    for path, text in files.items():
        t.write_file(path, text)
    if held is not None:  # networkd takes the links back with Tarn's files in place (they sort first)
        t.remove_file(net.hold_path(held))
    net.networkd_reload(t, keep)
    Link.objects.filter(host=host).update(managed=False)
    Link.objects.filter(host=host, name__in=[x.name for x in keep]).update(managed=True)


def changes_settle() -> int:
    """Beat: a pending network change past its deadline was undone by the host; say so and re-read its links."""
    due = ChangeSet.objects.filter(status=ChangeStatus.PENDING, deadline__lt=timezone.now() - timedelta(seconds=5))
    for cs in due:
        change_end(cs, ChangeStatus.ROLLED_BACK, "Not kept in time: the host put the original settings back.")
        try:
            if cs.target.get("held"):
                operation_start(kind="tuning.release", host=cs.host, user=None, params={"change_set": cs.pk})
            else:
                tuning_refresh_start(host=cs.host, user=None)
        except TargetBusy:
            pass  # a refresh is on its way already (a release: the next settle tries again)
    return len(due)


@operation_runner("tuning.release", lock=TUNING)
def tuning_release_run(tracker: Tracker) -> None:
    """A bond or VLAN change the host rolled back: networkd takes its links back, and they are read again."""
    cs = ChangeSet.objects.get(pk=tracker.op.params["change_set"])
    t = tracker.transport()
    tracker.progress(30, "networkd takes the links back")
    _release(t, cs)
    links_refresh(host=cs.host, t=t)
    tracker.progress(100, "The links are as before the change, and networkd's again.")
