"""What the configuration backup operations are called on their pages, and the backup page each came from."""

from appliance.titles import Title, operation_titles

BACKUP = {"back": "backup-detail", "back_arg": "backup", "back_label": "Back to {name}"}
LIST = {"back": "backup-list", "back_label": "Back to Backups"}

operation_titles(
    {
        "backups.backup": Title("Back up Tarn's configuration", **LIST),
        "backups.check": Title("Check backup {name} (dry run)", **BACKUP),
        "backups.restore": Title("Restore backup {name}", **BACKUP),
        "backups.delete": Title("Delete backup {name}", **LIST),
    }
)
