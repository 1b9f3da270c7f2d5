from celery import shared_task

from backups import services


@shared_task(name="backups.tasks.backups_run_due")
def backups_run_due_task() -> None:
    """Every minute: start the scheduled backup when its slot has come."""
    services.backups_run_due()


@shared_task(name="backups.tasks.uploads_prune")
def uploads_prune_task() -> None:
    """Daily: uploaded backups left unrestored for a day are deleted."""
    services.uploads_prune()
