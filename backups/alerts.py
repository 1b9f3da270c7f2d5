"""The backups app's alert rule: the newest scheduled backup failed (made, or pushed to its NAS). Asked at every
evaluation from the operations table; raised once, cleared by the next scheduled backup that works. It is about
Tarn itself, not a host: registered tarn-wide (analytics.hooks)."""

from analytics.choices import Level, Rule
from analytics.hooks import alert_source
from backups import selectors

FAILED = Rule(
    "backup_failed",
    "Configuration backup failed",
    Level.CRITICAL,
    help="The newest scheduled backup of Tarn's own configuration failed (or its copy did not reach the NAS).",
)


@alert_source(FAILED, tarn_wide=True)
def scheduled_backup_failed(*, host, now, active):
    failed = selectors.last_scheduled_failure()
    if failed is not None and FAILED.key in active:
        yield FAILED.key, "configuration backup", f"The scheduled configuration backup failed: {failed.message[:300]}"
