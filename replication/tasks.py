"""Beat entries for replication: each calls one service. Loading this module also registers the replication.*
runners (services) with the operation registry."""

from celery import shared_task

from replication.services import tasks_run_due


@shared_task(name="replication.tasks.tasks_run_due")
def tasks_run_due_task() -> None:
    """Every minute: the tasks whose clock is up or whose source has a new snapshot."""
    tasks_run_due()
