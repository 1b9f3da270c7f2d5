"""Celery tasks: the one task that runs every Operation, and the beat entries of the core (each calls one service)."""

from celery import shared_task

from appliance.operations import OPERATION_TASK, operation_execute
from appliance.services import audit_prune, hosts_refresh_facts, operations_reap_stale


@shared_task(name=OPERATION_TASK)
def operation_run(operation_id: int, secret: str | None = None) -> None:
    operation_execute(operation_id, secret=secret)


@shared_task(name="appliance.tasks.hosts_refresh_facts")
def hosts_refresh_facts_task() -> None:
    hosts_refresh_facts()


@shared_task(name="appliance.tasks.operations_reap")
def operations_reap_task() -> None:
    operations_reap_stale()


@shared_task(name="appliance.tasks.audit_prune")
def audit_prune_task() -> None:
    audit_prune()
