"""Self-test schedules: a calendar slot each (appliance.schedules); beat starts a run when its slot comes."""

from django.core.exceptions import ValidationError
from django.utils import timezone

from appliance.models import Host
from appliance.schedules import slot_last, slot_problems
from health.choices import SelfTestKind
from health.models import SelfTestSchedule
from health.services.runs import _host_for_changes, self_test_run_start


def schedules_run_due(*, now=None) -> int:
    """Start the runs whose slot has come since they last started (and since the schedule was made); a host with
    a run under way waits for it. One schedule's trouble stops no other (nor the reads after)."""
    now, started = now or timezone.now(), 0
    for schedule in SelfTestSchedule.objects.filter(enabled=True).select_related("host"):
        slot = slot_last(schedule, now)
        if slot < schedule.created_at or (schedule.last_started_at and schedule.last_started_at >= slot):
            continue
        try:
            self_test_run_start(host=schedule.host, user=None, kind=schedule.kind, schedule=schedule)
        except ValidationError:
            continue  # a run under way (it waits), a read-only host, or no disk can run it this time
        schedule.last_started_at = now
        schedule.save(update_fields=["last_started_at"])
        started += 1
    return started


def schedule_save(*, host: Host | None, kind: str, every: str, weekday: int = 6, day: int = 1, hour: int = 2):
    host = _host_for_changes(host)
    problems = {}
    if kind not in SelfTestKind.values:
        problems["kind"] = f"Choose one of: {', '.join(SelfTestKind.values)}."
    problems.update(slot_problems(every=every, hour=hour, weekday=weekday, day=day))
    if problems:
        raise ValidationError(problems)
    return SelfTestSchedule.objects.create(host=host, kind=kind, every=every, weekday=weekday, day=day, hour=hour)


def schedule_delete(*, schedule: SelfTestSchedule) -> None:
    schedule.delete()
