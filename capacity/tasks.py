"""Beat entries for capacity: each calls one service."""

from celery import shared_task

from appliance.models import Host
from capacity import services


@shared_task(name="capacity.tasks.capacity_update_all")
def capacity_update_all_task() -> None:
    """Every hour: each host's points recorded from its inventory and its forecasts made again; old points dropped."""
    for host in Host.objects.all():
        services.capacity_update(host=host)
    services.capacity_prune()
