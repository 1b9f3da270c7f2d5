"""Beat entries for the UPS: each calls one service."""

from celery import shared_task

from ups import services


@shared_task(name="ups.tasks.ups_read_all")
def ups_read_all_task() -> None:
    """Every minute: each UPS's state read (its alerts evaluate it)."""
    services.ups_read_all()
