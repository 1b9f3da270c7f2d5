"""Beat entries for alerts: each calls one service."""

from celery import shared_task

from analytics import services
from appliance.models import Host


@shared_task(name="analytics.tasks.alerts_evaluate_all")
def alerts_evaluate_all_task() -> None:
    """Every minute: each host's conditions against its open alerts (from the inventory in the database)."""
    for host in Host.objects.all():
        services.alerts_evaluate(host=host)


@shared_task(name="analytics.tasks.alert_deliver")
def alert_deliver_task(alert_id: int, channel_id: int, event: str) -> None:
    """One alert's raise or clear to one channel (a slow or broken channel holds up no other)."""
    services.alert_deliver(alert_id=alert_id, channel_id=channel_id, event=event)
