"""A host's links and kernel values mirrored into the database (every 5 minutes, and after each change)."""

from dataclasses import asdict

from django.db import transaction
from django.utils import timezone

from appliance.connect import transport_for
from appliance.models import Host, Operation
from appliance.operations import TargetBusy, Tracker, operation_runner, operation_start
from hostlib import kernel, net, zfs
from hostlib.runner import Transport
from tuning.models import KernelState, Link
from tuning.services.common import TUNING


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
                    "kind": x.kind,
                    "mac": x.mac,
                    "mtu": x.mtu,
                    "min_mtu": x.min_mtu,
                    "max_mtu": x.max_mtu,
                    "state": x.state,
                    "up": x.up,
                    "master": x.master,
                    "parent": x.parent,
                    "perm_mac": x.perm_mac,
                    "info": x.info,
                    "addresses": [asdict(a) for a in x.addresses],
                    "counters": x.counters,
                    "driver": x.driver,
                    "speed_mbps": x.speed_mbps,
                    "rings": x.rings,
                    "offloads": x.offloads,
                    "managed": x.name in managed,
                    "management": x.name in management,
                    "observed_at": now,
                },
            )
    return list(Link.objects.filter(host=host))


def kernel_refresh(*, host: Host, t: Transport | None = None) -> KernelState:
    t = t or transport_for(host)
    state, _ = KernelState.objects.update_or_create(
        host=host,
        defaults={
            "sysctl": kernel.read_all_sysctls(t),
            "zfs": kernel.read_all_parameters(t),
            "arc": _arc(t),
            "observed_at": timezone.now(),
        },
    )
    return state


def _arc(t: Transport) -> dict:
    stats = zfs.arcstats(t)
    return {k: stats[k] for k in ("size", "c_max", "c_min", "hits", "misses") if k in stats}


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


def tuning_refresh_start(*, host: Host, user) -> Operation:
    return operation_start(kind="tuning.refresh", host=host, user=user)


@operation_runner("tuning.refresh", lock=f"{TUNING}:refresh", reads=True)
def tuning_refresh_run(tracker: Tracker) -> None:
    tracker.progress(20, "Reading links and kernel values")
    tuning_refresh(host=tracker.op.host, operation=tracker.op)
    tracker.progress(100, "Links and kernel values read.")
