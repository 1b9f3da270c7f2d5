"""Beat entries for permissions: each calls one service. Loading this module also registers the permissions.*
runners (services) with the operation registry."""

from celery import shared_task

from permissions.services import quotas_read_due


@shared_task(name="permissions.tasks.quotas_read_due")
def quotas_read_due_task() -> None:
    """Every minute: the hosts whose quotas are due a read (QUOTA_READ_MINUTES apart)."""
    quotas_read_due()
