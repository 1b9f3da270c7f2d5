"""Writes of the backups app, one module per noun (files, make, schedule, restore); every name callers use is here."""

from backups.services.files import MAX_UPLOAD, path_of
from backups.services.files import open_file as download
from backups.services.make import (
    backup_delete_start,
    backup_make,
    backup_start,
    backups_possible,
    check_passphrase,
    install_id,
    retention,
)
from backups.services.restore import (
    backup_open,
    backup_restore,
    backup_restore_start,
    check_newer,
    dry_run,
    upload_save,
    uploads_prune,
)
from backups.services.schedule import backups_run_due, schedule_get, schedule_save

__all__ = [
    "MAX_UPLOAD",
    "backup_delete_start",
    "backup_start",
    "backups_possible",
    "backups_run_due",
    "check_newer",
    "check_passphrase",
    "download",
    "dry_run",
    "install_id",
    "backup_make",
    "backup_open",
    "path_of",
    "backup_restore",
    "backup_restore_start",
    "retention",
    "schedule_get",
    "schedule_save",
    "upload_save",
    "uploads_prune",
]
