"""Schedules: a set of profiles run on a dataset at cron times. Each schedule owns a django-celery-beat
PeriodicTask (so beat fires it and an admin may edit it in the UI); firing starts a suite of its profiles. A
firing while another benchmark runs on the host is skipped and says so on the schedule."""

import json
import re

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone
from django_celery_beat.models import CrontabSchedule, PeriodicTask

from appliance.checks import confirmed
from appliance.models import Host
from appliance.operations import TargetBusy
from appliance.schedules import Cron, CronError, cron_field, cron_parse
from benchmarks.choices import SCHEDULE_MINUTE_HELP, SCHEDULES_ENABLED_MAX
from benchmarks.models import Schedule
from benchmarks.selectors import storage_profile
from benchmarks.services.suites import suite_start
from pools.selectors import filesystem

TASK = "benchmarks.tasks.schedule_fire"
MINUTE = re.compile(r"[0-9]{1,2}")  # one minute of the hour: at most one firing an hour (benchmarks.choices)
FIELDS = {"minute": "minute", "hour": "hour", "day_of_week": "day of week"}  # the form's name: appliance.schedules'


def check_cron(minute: str, hour: str, day_of_week: str) -> Cron:
    """The schedule's cron fields read by appliance.schedules (ASCII digits, day of week 0-7 with 7 Sunday too), the
    minute one number; every field's problem at once, by field."""
    problems = {}
    for name, value in (("minute", minute), ("hour", hour), ("day_of_week", day_of_week)):
        try:
            cron_field(value if isinstance(value, str) else "", FIELDS[name])
        except CronError as exc:
            problems[name] = str(exc)
    if "minute" not in problems and not MINUTE.fullmatch(minute):
        problems["minute"] = f"The minute must be one number ({minute} is not). {SCHEDULE_MINUTE_HELP}"
    if problems:
        raise ValidationError(problems)
    try:
        return cron_parse(f"{minute} {hour} * * {day_of_week}")
    except CronError as exc:
        raise ValidationError({next((k for k, v in FIELDS.items() if v == exc.field), "minute"): str(exc)}) from None


def _for_beat(text: str, values: frozenset[int], *, weekday: bool = False) -> str:
    """A field as celery's crontab reads it: as typed, unless it uses what only crontab(5) has (7 for Sunday, a
    start with a step such as 5/15): then the values it names, listed."""
    if re.search(r"(^|,)[0-9]+/", text) or (weekday and "7" in text):
        return ",".join(map(str, sorted(values)))
    return text


def _check_enabled_cap(*, host: Host, schedule: Schedule) -> None:
    """Within the transaction that saves it, the host's row locked (PostgreSQL) so two saves cannot both pass."""
    Host.objects.select_for_update().filter(pk=host.pk).first()
    others = Schedule.objects.filter(host=host, enabled=True).exclude(pk=schedule.pk).count()
    if others >= SCHEDULES_ENABLED_MAX:
        raise ValidationError(
            {
                "enabled": f"{host.name} has {others} enabled benchmark schedules, the most a host may have: "
                "disable or delete one first, or save this one disabled."
            }
        )


def schedule_save(*, host: Host, user, data: dict, pk: int | None = None) -> Schedule:
    """data: name, profiles, target, size, runtime, cache_ok, minute, hour, day_of_week, drop_percent, enabled (a
    cron field left out keeps the schedule's, or the model's default for a new one)."""
    defaults = Schedule.objects.filter(host=host, pk=pk).first() if pk else Schedule()
    cron = check_cron(*(data.get(name, getattr(defaults, name)) for name in ("minute", "hour", "day_of_week")))
    if filesystem(host=host, name=data["target"]) is None:
        raise ValidationError({"target": f"{host.name} has no filesystem {data['target']}."})
    if not data["profiles"] or any(storage_profile(p) is None for p in data["profiles"]):
        raise ValidationError({"profiles": "Choose one or more storage profiles."})
    schedule = Schedule.objects.get(host=host, pk=pk) if pk else Schedule(host=host, created_by=user)
    if Schedule.objects.filter(host=host, name=data["name"]).exclude(pk=schedule.pk).exists():
        raise ValidationError({"name": f"{host.name} has a schedule named {data['name']} already."})
    for key, value in data.items():
        setattr(schedule, key, value)
    with transaction.atomic():
        if schedule.enabled:
            _check_enabled_cap(host=host, schedule=schedule)
        beat, _ = CrontabSchedule.objects.get_or_create(
            minute=schedule.minute,
            hour=_for_beat(schedule.hour, cron.hours),
            day_of_week=_for_beat(schedule.day_of_week, cron.weekdays, weekday=True),
            day_of_month="*",
            month_of_year="*",
            timezone=settings.TIME_ZONE,
        )
        schedule.save()
        task = schedule.task or PeriodicTask(name=f"Tarn benchmark schedule {schedule.pk}", task=TASK)
        task.crontab, task.interval = beat, None
        task.args, task.enabled = json.dumps([schedule.pk]), schedule.enabled
        task.description = f"{host.name}: {schedule.name}"
        task.save()
        if schedule.task_id != task.pk:
            schedule.task = task
            schedule.save(update_fields=["task"])
    return schedule


def schedule_delete(*, schedule: Schedule, user, confirm: str) -> bool:
    """The schedule and its beat entry, with its name typed again; its runs stay, no longer linked."""
    confirmed(confirm, schedule.name, f"Type the schedule's name ({schedule.name}) to delete it.")
    with transaction.atomic():
        if schedule.task_id:
            PeriodicTask.objects.filter(pk=schedule.task_id).delete()
        schedule.delete()
    return True


def schedule_fire(schedule_id: int):
    """Beat: start the schedule's suite now (checked like any run; a refusal is noted on the schedule)."""
    schedule = Schedule.objects.select_related("host").filter(pk=schedule_id, enabled=True).first()
    if schedule is None:
        return None
    suite, message = None, ""
    try:
        suite = suite_start(
            host=schedule.host,
            user=None,
            profiles=schedule.profiles,
            dataset=schedule.target,
            size=schedule.size,
            runtime=schedule.runtime,
            cache_ok=schedule.cache_ok,
            schedule=schedule,
            title=f"{schedule.name} (scheduled)",
        )
        message = f"Started suite {suite.pk}."
    except TargetBusy:  # before ValidationError, which it is
        message = "Skipped: another benchmark was running on the host."
    except ValidationError as exc:
        message = "Skipped: " + "; ".join(f"{k}: {' '.join(v)}" for k, v in exc.message_dict.items())
    Schedule.objects.filter(pk=schedule.pk).update(last_fired_at=timezone.now(), last_message=message[:500])
    return suite
