"""Celery tasks: ids in, one service call."""

from celery import shared_task


@shared_task
def host_probe(operation_id: int) -> None:
    from appliance.services import host_probe_run

    host_probe_run(operation_id=operation_id)


@shared_task
def hosts_refresh_facts() -> None:
    from appliance.services import hosts_refresh_facts

    hosts_refresh_facts()


@shared_task
def operations_reap() -> None:
    from appliance.services import operations_reap_stale

    operations_reap_stale()
