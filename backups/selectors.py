"""Reads of the backups app: the backups kept, the schedule, the dashboard's line."""

from datetime import timedelta

from django.utils import timezone

from appliance.choices import OperationStatus
from appliance.models import Operation
from appliance.selectors import operations_of
from backups.choices import Origin
from backups.models import Backup, BackupSchedule


def backup_list(*, origins=None):
    rows = Backup.objects.select_related("user", "pushed_to")
    return rows.filter(origin__in=origins) if origins else rows


def schedule():
    return BackupSchedule.objects.select_related("push_host").first()


def recent_operations(limit: int = 10):
    """The backups' latest operations (made, checked, restored, deleted), by the kinds' index."""
    return operations_of("backups")[:limit]


def last_scheduled_failure():
    """What went wrong with the newest scheduled backup (what the alert and the dashboard say), else None: its
    operation failed, or it could not start at all (the schedule's last error, newer than that operation)."""
    last = Operation.objects.filter(kind="backups.backup", params__origin=Origin.SCHEDULED).order_by("-id").first()
    plan = BackupSchedule.objects.filter(enabled=True).first()
    if plan and plan.last_error_at and (last is None or plan.last_error_at > last.created_at):
        return Operation(
            kind="backups.backup",
            status=OperationStatus.FAILED,
            message=plan.last_error,
            finished_at=plan.last_error_at,
        )
    return last if last and last.status == OperationStatus.FAILED else None


def newest(*, origins=(Origin.MANUAL, Origin.SCHEDULED)):
    return Backup.objects.filter(origin__in=origins).order_by("-created_at", "-id").first()


def dashboard_backups(*, hosts) -> dict:
    """The dashboard's panel, shown when something needs doing: no backup yet, none for 8 days, or the scheduled
    one failing."""
    latest, failed = newest(), last_scheduled_failure()
    stale = latest is None or timezone.now() - latest.created_at > timedelta(days=8)
    if not (stale or failed):
        return {}
    return {"extra_panels": [("backups/_dashboard.html", {"latest": latest, "failed": failed, "plan": schedule()})]}
