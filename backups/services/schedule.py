"""The backup schedule (one row): when, how many to keep, where to push, and the key scheduled backups are sealed
to (only its public half and the key wrapped with the passphrase are stored); beat starts the backup when its slot
comes."""

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from appliance.models import Host, Operation
from appliance.operations import operation_start
from appliance.schedules import slot_last, slot_problems
from backups import archive
from backups.choices import KEEP_MAX, Origin
from backups.models import BackupSchedule
from backups.services.make import check_passphrase


def schedule_get() -> BackupSchedule:
    schedule = BackupSchedule.objects.first()
    return schedule or BackupSchedule.objects.create()


def schedule_save(
    *,
    enabled: bool,
    every: str,
    hour: int,
    weekday: int = 6,
    day: int = 1,
    keep: int = 7,
    push_host: Host | None = None,
    include_series: bool = False,
    passphrase: str = "",
    passphrase_confirm: str = "",
) -> BackupSchedule:
    """Save the schedule. A passphrase given sets the backups' key (only its public half and the key wrapped with it
    are stored); one must be set before the schedule can be on."""
    problems = slot_problems(every=every, hour=hour, weekday=weekday, day=day)
    if not 1 <= keep <= KEEP_MAX:
        problems["keep"] = f"Keep 1 to {KEEP_MAX} backups."
    if push_host is not None and push_host.is_local:
        problems["push_host"] = "Choose a NAS reached over SSH: a copy on this machine is no copy."
    elif push_host is not None and push_host.read_only:
        problems["push_host"] = f"{push_host.name} is read-only in Tarn: nothing can be written there."
    schedule = schedule_get()
    if passphrase or passphrase_confirm:
        try:
            check_passphrase(passphrase, passphrase_confirm)
        except ValidationError as exc:
            problems.update(exc.message_dict)
    elif enabled and not schedule.recipient:
        problems["passphrase"] = "Set a passphrase for the scheduled backups (they are sealed with it)."
    if problems:
        raise ValidationError(problems)
    if passphrase:
        schedule.recipient, schedule.wrapped_key = archive.new_key(passphrase)
        schedule.key_set_at = timezone.now()
    schedule.enabled, schedule.every, schedule.hour, schedule.weekday, schedule.day = enabled, every, hour, weekday, day
    schedule.keep, schedule.push_host, schedule.include_series = keep, push_host, include_series
    schedule.save()
    return schedule


def backups_run_due(*, now=None) -> Operation | None:
    """Beat, every minute: start the scheduled backup once its slot has come (never for a slot before the schedule
    was made); a failure to start is kept for the alert."""
    now = now or timezone.now()
    schedule = BackupSchedule.objects.filter(enabled=True).first()
    if schedule is None:
        return None
    slot = slot_last(schedule, now)
    if slot < schedule.created_at or (schedule.last_started_at and schedule.last_started_at >= slot):
        return None
    schedule.last_started_at = now
    schedule.save(update_fields=["last_started_at"])
    try:
        with transaction.atomic():
            return operation_start(
                kind="backups.backup",
                host=None,
                user=None,
                params={"origin": Origin.SCHEDULED, "include_series": schedule.include_series},
            )
    except ValidationError as exc:
        BackupSchedule.objects.filter(pk=schedule.pk).update(
            last_error=f"Not started: {'; '.join(exc.messages)}"[:500], last_error_at=now
        )
        return None
