"""Beat entries for disk health: each calls one service. Loading this module also registers the health.* runners
(services) with the operation registry."""

from celery import shared_task

from health.services import health_poll_due, temperatures_prune


@shared_task(name="health.tasks.health_poll_due")
def health_poll_due_task() -> None:
    """Every minute: the hosts whose disks are due a read (POLL_MINUTES apart)."""
    health_poll_due()


@shared_task(name="health.tasks.temperatures_prune")
def temperatures_prune_task() -> None:
    temperatures_prune()
