"""Celery tasks: the one task that runs every Operation, and the beat entries of the core (each calls one service)."""

from celery import shared_task

from appliance.operations import OPERATION_TASK, TURN_RETRY_SECONDS, operation_execute, turn_give_back, turn_take
from appliance.services import audit_prune, hosts_refresh_facts, operations_reap_stale


@shared_task(name=OPERATION_TASK, bind=True)
def operation_run(self, operation_id: int, secret: str | None = None) -> None:
    """One operation, once its host's turn is its own (a host's changes run one at a time wherever its queue is
    served); until then its message goes round again."""
    if not turn_take(operation_id):
        self.apply_async(
            args=[operation_id],
            kwargs=self.request.kwargs,
            queue=self.request.delivery_info.get("routing_key") or None,
            countdown=TURN_RETRY_SECONDS,
            soft_time_limit=self.request.timelimit[1] if self.request.timelimit else None,
            time_limit=self.request.timelimit[0] if self.request.timelimit else None,
        )
        return
    try:
        operation_execute(operation_id, secret=secret)
    finally:
        turn_give_back(operation_id)


@shared_task(name="appliance.tasks.hosts_refresh_facts")
def hosts_refresh_facts_task() -> None:
    hosts_refresh_facts()


@shared_task(name="appliance.tasks.operations_reap")
def operations_reap_task() -> None:
    operations_reap_stale()


@shared_task(name="appliance.tasks.audit_prune")
def audit_prune_task() -> None:
    audit_prune()
