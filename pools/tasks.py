"""Celery tasks for storage: ids in, one service call."""

from celery import shared_task


@shared_task
def inventory_refresh_task(operation_id: int) -> None:
    from pools.services import inventory_refresh_run

    inventory_refresh_run(operation_id=operation_id)


@shared_task
def inventory_refresh_all() -> None:
    """Beat: queue a read of every ZFS host's storage on that host's own queue."""
    from pools.services import inventory_refresh_schedule

    inventory_refresh_schedule()


@shared_task
def inventory_refresh_host(host_id: int) -> None:
    from pools.services import inventory_refresh_quietly

    inventory_refresh_quietly(host_id=host_id)


@shared_task
def storage_command_task(operation_id: int) -> None:
    from pools.services import storage_command_run

    storage_command_run(operation_id=operation_id)


@shared_task
def snapshot_tasks_run_due() -> None:
    from pools.services import snapshot_tasks_run_due

    snapshot_tasks_run_due()


@shared_task
def pool_import_scan_task(operation_id: int) -> None:
    from pools.services import pool_import_scan_run

    pool_import_scan_run(operation_id=operation_id)


@shared_task
def shares_apply_task(operation_id: int) -> None:
    from pools.services import shares_apply_run

    shares_apply_run(operation_id=operation_id)


@shared_task
def samba_user_task(operation_id: int, secret: str | None = None) -> None:
    from pools.services import samba_user_run

    samba_user_run(operation_id=operation_id, secret=secret)


@shared_task
def share_status_task(operation_id: int) -> None:
    from pools.services import share_status_run

    share_status_run(operation_id=operation_id)


@shared_task
def scrub_schedules_run_due() -> None:
    from pools.services import scrub_schedules_run_due

    scrub_schedules_run_due()


@shared_task
def share_folder_task(operation_id: int) -> None:
    from pools.services import share_folder_run

    share_folder_run(operation_id=operation_id)
