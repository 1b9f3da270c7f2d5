"""Beat entries for benchmarks: each calls one service. Operations run through appliance.tasks.operation_run."""

from celery import shared_task

from benchmarks.services import runs_reconcile


@shared_task(name="benchmarks.tasks.runs_reconcile")
def runs_reconcile_task() -> None:
    """Every 30 s: runs left behind by a worker that died are ended and cleaned up on their host."""
    runs_reconcile()
