"""Beat entries for storage: each calls one service. Operations run through appliance.tasks.operation_run."""

from celery import shared_task

from pools.services import inventory_refresh_schedule, scrub_schedules_run_due, snapshot_tasks_run_due


@shared_task(name="pools.tasks.inventory_refresh_all")
def inventory_refresh_all() -> None:
    """Every 5 minutes: a full read of every ZFS host, each as an operation on that host's queue."""
    inventory_refresh_schedule()


@shared_task(name="pools.tasks.snapshot_tasks_run_due")
def snapshot_tasks_run_due_task() -> None:
    snapshot_tasks_run_due()


@shared_task(name="pools.tasks.scrub_schedules_run_due")
def scrub_schedules_run_due_task() -> None:
    scrub_schedules_run_due()
