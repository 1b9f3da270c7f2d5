"""Beat entries for benchmarks: each calls one service. Operations run through appliance.tasks.operation_run."""

from celery import shared_task

from benchmarks.services import schedule_fire


@shared_task(name="benchmarks.tasks.schedule_fire")
def schedule_fire_task(schedule_id: int) -> None:
    """A benchmark schedule's beat entry (django-celery-beat PeriodicTask, editable on the Benchmarks page)."""
    schedule_fire(schedule_id)
