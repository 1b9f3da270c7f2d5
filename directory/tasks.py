"""Beat entries for the directory: each calls one service. Loading this module also registers the directory.*
runners (services) with the operation registry."""

from celery import shared_task

from directory.services import members_check_due


@shared_task(name="directory.tasks.members_check_due")
def members_check_due_task() -> None:
    """Every minute: the joined hosts whose join is due a check (CHECK_MINUTES apart)."""
    members_check_due()
