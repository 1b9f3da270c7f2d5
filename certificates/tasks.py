from celery import shared_task

from certificates import services


@shared_task(name="certificates.tasks.acme_renew_due")
def acme_renew_due_task() -> None:
    """Hourly: order the ACME certificate's renewal once 2/3 of its lifetime has passed."""
    services.acme_renew_due()
