"""Beat entries for tuning: each calls one service. Operations run through appliance.tasks.operation_run."""

from celery import shared_task

from tuning.services import changes_settle, tuning_refresh_schedule


@shared_task(name="tuning.tasks.tuning_refresh_all")
def tuning_refresh_all() -> None:
    """Every 5 minutes: links and kernel values of every host (drift shows from this)."""
    tuning_refresh_schedule()


@shared_task(name="tuning.tasks.changes_settle")
def changes_settle_task() -> None:
    """Every 10 s: network changes past their deadline were undone by their host; record it."""
    changes_settle()
