"""The network changes an admin asks for (an MTU, a bridge, a bond, a VLAN, a kept one undone): each checked against
the inventory and started as a change set whose operation (tuning.network, in network.py) arms the restore on the
host before anything changes."""

from dataclasses import asdict

from django.core.exceptions import ValidationError
from django.db import transaction

from appliance.checks import confirmed
from appliance.models import Host
from appliance.operations import operation_start
from hostlib import net
from tuning.choices import ROLLBACK_SECONDS_MAX, ROLLBACK_SECONDS_MIN, ChangeKind, ChangeStatus
from tuning.models import ChangeSet, Link


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
    parent = Link.objects.filter(host=host, name=link.parent).first() if link.kind == "vlan" else None
    if parent and mtu > parent.mtu:
        raise ValidationError(
            {"mtu": f"{name} is a VLAN on {parent.name} (MTU {parent.mtu}): raise {parent.name}'s first."}
        )
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
    return _master_delete_start(host=host, user=user, name=name, confirm=confirm, seconds=seconds, kind="bridge")


def _master_delete_start(*, host: Host, user, name: str, confirm: str, seconds: int, kind: str) -> ChangeSet:
    """Delete a bridge or a bond: its addresses go to its first port. Not one carrying VLANs (they would go with
    it), nor a bond in a bridge or carrying the management connection (a bridge of it was confirmed when made)."""
    link = _link(host, name, "name")
    if link.kind != kind:
        raise ValidationError({"name": f"{name} is not a {kind}."})
    if link.master:
        raise ValidationError({"name": f"{name} is a port of {link.master}: take it out of {link.master} first."})
    vlans = list(Link.objects.filter(host=host, kind="vlan", parent=name).values_list("name", flat=True))
    if vlans:
        raise ValidationError({"name": f"{name} carries {', '.join(vlans)}: delete the VLANs first."})
    if kind == "bond" and link.management:
        raise ValidationError({"name": f"{name} carries the management connection: change it at the console."})
    confirmed(confirm, name, f"Type the {kind}'s name ({name}) to delete it.")
    ports = list(Link.objects.filter(host=host, master=name).values_list("name", flat=True))
    return _network_start(
        host,
        user,
        kind=ChangeKind.UNBRIDGE if kind == "bridge" else ChangeKind.UNBOND,
        title=f"Delete {kind} {name}",
        links=[name, *ports],
        target={kind: name, "ports": ports},
        seconds=seconds,
    )


def _free_nics(host: Host, names: list[str], field: str, what: str) -> list[Link]:
    """The links named, each once, each a NIC in no bridge or bond and carrying no VLAN."""
    twice = sorted({p for p in names if names.count(p) > 1})
    if twice:
        raise ValidationError({field: f"Name each {what} once: {', '.join(twice)} is named more than once."})
    rows = [_link(host, p, field) for p in names]
    bad = [r.name for r in rows if r.kind != "ether" or r.master]
    if bad:
        raise ValidationError({field: f"Only NICs that are in no bridge or bond yet: not {', '.join(bad)}."})
    carrying = sorted(Link.objects.filter(host=host, kind="vlan", parent__in=names).values_list("parent", flat=True))
    if carrying:
        raise ValidationError({field: f"{', '.join(carrying)} carries a VLAN: delete the VLAN first."})
    return rows


def _new_name(host: Host, name: str, field: str = "name") -> str:
    try:
        net.check_ifname(name)
    except ValueError as exc:
        raise ValidationError({field: str(exc)}) from None
    if Link.objects.filter(host=host, name=name).exists():
        raise ValidationError({field: f"{host.name} has a link named {name} already."})
    return name


def bond_create_start(
    *,
    host: Host,
    user,
    name: str,
    ports: list[str],
    mode: str = "active-backup",
    miimon: int = 100,
    lacp_rate: str = "",
    xmit_hash_policy: str = "",
    seconds: int,
) -> ChangeSet:
    """Bond two NICs or more (their addresses move to the bond). Never the management link: the change would cut
    Tarn off the host it has to keep or undo it on."""
    _new_name(host, name)
    if len(ports) < 2:
        raise ValidationError({"ports": "A bond needs two NICs at least (one NIC is no failover)."})
    rows = _free_nics(host, ports, "ports", "port")
    taken = [r.name for r in rows if r.management]
    if taken:
        raise ValidationError(
            {
                "ports": f"{', '.join(taken)} carries the management connection: bond data NICs only (a bond of the "
                "management link is set up at the console)."
            }
        )
    try:
        options = net.BondOptions(mode, miimon, lacp_rate, xmit_hash_policy).checked()
    except ValueError as exc:
        field, _, message = str(exc).partition(": ")
        raise ValidationError({field: message[:1].upper() + message[1:] + "."}) from None
    mtus = sorted({r.mtu for r in rows})
    return _network_start(
        host,
        user,
        kind=ChangeKind.BOND,
        title=f"Bond {name} ({options.mode}) over {', '.join(ports)}",
        links=[name, *ports],
        target={"bond": name, "ports": ports, "options": asdict(options), "mtu": mtus[0]},
        seconds=seconds,
    )


def bond_delete_start(*, host: Host, user, name: str, confirm: str, seconds: int) -> ChangeSet:
    return _master_delete_start(host=host, user=user, name=name, confirm=confirm, seconds=seconds, kind="bond")


def vlan_create_start(
    *, host: Host, user, link: str, vid: int, name: str = "", addresses: list[str] = (), seconds: int
) -> ChangeSet:
    """A VLAN (802.1Q) on a NIC, bond or bridge, with addresses of its own; the parent keeps its untagged traffic."""
    parent = _link(host, link)
    if parent.kind not in net.VLAN_PARENT_KINDS:
        raise ValidationError({"link": f"{link} is a {parent.kind} link: a VLAN goes on a NIC, a bond or a bridge."})
    if parent.master:
        raise ValidationError({"link": f"{link} is a port of {parent.master}: put the VLAN on {parent.master}."})
    try:
        net.check_vlan_id(vid)
    except ValueError as exc:
        raise ValidationError({"vid": f"{exc}."}) from None
    if Link.objects.filter(host=host, kind="vlan", parent=link, info__id=vid).exists():
        raise ValidationError({"vid": f"{link} carries VLAN {vid} already."})
    name = _new_name(host, name or net.vlan_name(link, vid))
    try:
        cidrs = [net.check_cidr(a) for a in addresses]
    except ValueError as exc:
        raise ValidationError({"addresses": f"{exc}."}) from None
    if len(set(cidrs)) != len(cidrs):
        raise ValidationError({"addresses": "Each address once."})
    used = {c.split("/")[0]: x.name for x in Link.objects.filter(host=host) for c in x.cidrs}
    clash = [f"{c} ({used[c.split('/')[0]]})" for c in cidrs if c.split("/")[0] in used]
    if clash:
        raise ValidationError({"addresses": f"{host.name} has {', '.join(clash)} already."})
    return _network_start(
        host,
        user,
        kind=ChangeKind.VLAN,
        title=f"VLAN {vid} on {link} ({name})",
        links=[name, link],
        target={"vlan": name, "link": link, "vid": vid, "addresses": cidrs},
        seconds=seconds,
    )


def vlan_delete_start(*, host: Host, user, name: str, confirm: str, seconds: int) -> ChangeSet:
    link = _link(host, name, "name")
    if link.kind != "vlan":
        raise ValidationError({"name": f"{name} is not a VLAN."})
    if link.management:
        raise ValidationError({"name": f"{name} carries the management connection: change it at the console."})
    if Link.objects.filter(host=host, master=name).exists():
        raise ValidationError({"name": f"{name} is a port of a bridge: delete the bridge first."})
    confirmed(confirm, name, f"Type the VLAN's name ({name}) to delete it.")
    return _network_start(
        host,
        user,
        kind=ChangeKind.UNVLAN,
        title=f"Delete VLAN {name}",
        links=[name, link.parent],
        target={"vlan": name, "link": link.parent, "vid": link.info.get("id"), "addresses": link.cidrs},
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
    elif cs.kind == ChangeKind.UNBRIDGE:
        new = bridge_create_start(
            host=host, user=user, name=target["bridge"], ports=target["ports"], seconds=seconds, management_ok=True
        )
    elif cs.kind == ChangeKind.BOND:
        name = target["bond"]
        new = bond_delete_start(host=host, user=user, name=name, confirm=name, seconds=seconds)
    elif cs.kind == ChangeKind.UNBOND:
        options = target.get("options") or {}
        new = bond_create_start(
            host=host, user=user, name=target["bond"], ports=target["ports"], seconds=seconds, **options
        )
    elif cs.kind == ChangeKind.VLAN:
        name = target["vlan"]
        new = vlan_delete_start(host=host, user=user, name=name, confirm=name, seconds=seconds)
    else:
        new = vlan_create_start(
            host=host,
            user=user,
            link=target["link"],
            vid=target["vid"],
            name=target["vlan"],
            addresses=target.get("addresses") or [],
            seconds=seconds,
        )
    new.title = f"Revert: {cs.title}"
    new.target = {**new.target, "reverts": cs.pk}
    new.save(update_fields=["title", "target"])
    return new
