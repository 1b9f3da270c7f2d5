"""Writes for storage, one module per noun; every name callers use is here."""

from pools.services.commands import command_start, new_dataset_name, refuse_if_in_use, storage_command_run
from pools.services.datasets import (
    dataset_create_start,
    dataset_destroy_start,
    dataset_inherit_start,
    dataset_rename_start,
    dataset_set_start,
)
from pools.services.inventory import Scope, inventory_refresh, inventory_refresh_schedule, inventory_refresh_start
from pools.services.pools import (
    media_speed_save,
    pool_add_start,
    pool_create_start,
    pool_destroy_start,
    pool_device_start,
    pool_export_start,
    pool_import_scan_start,
    pool_import_start,
    pool_scrub_start,
    pool_trim_start,
)
from pools.services.schedules import (
    scrub_schedule_save,
    scrub_schedules_run_due,
    snapshot_task_delete,
    snapshot_task_save,
    snapshot_task_start,
    snapshot_tasks_run_due,
)
from pools.services.snapshots import (
    snapshot_clone_start,
    snapshot_create_start,
    snapshot_destroy_start,
    snapshot_hold_start,
    snapshot_rollback_start,
)

__all__ = [
    "new_dataset_name",
    "Scope",
    "command_start",
    "dataset_create_start",
    "dataset_destroy_start",
    "dataset_inherit_start",
    "dataset_rename_start",
    "dataset_set_start",
    "inventory_refresh",
    "inventory_refresh_schedule",
    "inventory_refresh_start",
    "media_speed_save",
    "pool_add_start",
    "pool_create_start",
    "pool_destroy_start",
    "pool_device_start",
    "pool_export_start",
    "pool_import_scan_start",
    "pool_import_start",
    "pool_scrub_start",
    "pool_trim_start",
    "refuse_if_in_use",
    "scrub_schedule_save",
    "scrub_schedules_run_due",
    "snapshot_clone_start",
    "snapshot_create_start",
    "snapshot_destroy_start",
    "snapshot_hold_start",
    "snapshot_rollback_start",
    "snapshot_task_delete",
    "snapshot_task_save",
    "snapshot_task_start",
    "snapshot_tasks_run_due",
    "storage_command_run",
]
