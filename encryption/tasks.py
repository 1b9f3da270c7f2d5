"""Encryption's beat entries (each calls one service)."""

from celery import shared_task

from encryption import services


@shared_task(name="encryption.tasks.key_exports_prune")
def key_exports_prune_task() -> None:
    """Hourly: key exports not downloaded within 24 hours are deleted (the rows hold the encrypted files)."""
    services.key_exports_prune()
