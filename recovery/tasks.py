"""Beat entries for recovery: each calls one service. Loading this module also registers the recovery.* runners."""

from celery import shared_task

from appliance.models import Host
from recovery import services


@shared_task(name="recovery.tasks.safety_snapshots_prune")
def safety_snapshots_prune_task() -> None:
    """Daily: each host's restore safety snapshots past their days, destroyed (held ones stay)."""
    for host in Host.objects.filter(read_only=False):
        services.safety_snapshots_prune(host=host)
