"""Beat entries for analytics and alerts: each calls one service (or selector, to find what is due)."""

from celery import shared_task

from analytics import selectors, services
from appliance.models import Host


@shared_task(name="analytics.tasks.alerts_evaluate_all")
def alerts_evaluate_all_task() -> None:
    """Every minute: each host's conditions against its open alerts (from the inventory in the database)."""
    for host in Host.objects.all():
        services.alerts_evaluate(host=host)
    services.alerts_evaluate(host=None)  # Tarn's own conditions (its configuration backups)


@shared_task(name="analytics.tasks.alert_deliver")
def alert_deliver_task(alert_id: int, channel_id: int, event: str) -> None:
    """One alert's raise or clear to one channel (a slow or broken channel holds up no other)."""
    services.alert_deliver(alert_id=alert_id, channel_id=channel_id, event=event)


@shared_task(name="analytics.tasks.samples_due")
def samples_due_task() -> None:
    """Every 5 s: queue a sample of each host whose last one is an interval old (each host its own task, so a slow or
    unreachable host delays no other; a task not started within the interval is dropped, not piled up)."""
    interval = selectors.sampler_setting().interval
    for host in selectors.hosts_due():
        if services.sample_claim(host=host, seconds=interval + 30):
            sample_host_task.apply_async(args=[host.pk], expires=interval, queue="default")


@shared_task(name="analytics.tasks.sample_host")
def sample_host_task(host_id: int) -> None:
    host = Host.objects.filter(pk=host_id).first()
    if host is not None:
        services.sample_take(host=host)


@shared_task(name="analytics.tasks.series_maintain")
def series_maintain_task() -> None:
    """Every 5 minutes: rollups and pruning of the stored series."""
    services.series_maintain()
