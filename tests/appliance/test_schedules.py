"""The core calendar (appliance.schedules): cron lines read once for every app, calendar slots and their next run,
the weekday chosen by name; and the apps that used to read them their own way now agree with it."""

from datetime import datetime, timedelta
from types import SimpleNamespace
from zoneinfo import ZoneInfo

import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone

from appliance.choices import Every, Weekday
from appliance.schedules import (
    CronError,
    cron_parse,
    interval_due,
    interval_next,
    slot_last,
    slot_next,
    slot_problems,
)
from backups.forms import ScheduleForm as BackupScheduleForm
from benchmarks.services.schedules import check_cron
from health.forms import ScheduleForm as SelfTestScheduleForm

PARIS = ZoneInfo("Europe/Paris")


@pytest.mark.parametrize(
    ("line", "field"),
    [
        ("０ 3 * * *", ""),  # fullwidth zero
        ("0 ٣ * * *", ""),  # Arabic-Indic three
        ("0 3 * * 8", "day of week"),
        ("0 0 31 2 *", "day of month"),  # never fires
        ("0 0 30 2 *", "day of month"),
        ("0 0 31 4,6,9,11 *", "day of month"),
    ],
)
def test_a_cron_line_that_is_not_plain_digits_is_out_of_range_or_never_fires_is_refused_naming_the_field(line, field):
    with pytest.raises(CronError) as caught:
        cron_parse(line)
    assert caught.value.field == field


def test_both_0_and_7_are_sunday_and_a_monthly_day_that_some_months_lack_still_fires():
    assert cron_parse("0 3 * * 7").weekdays == cron_parse("0 3 * * 0").weekdays == frozenset({0})
    assert cron_parse("0 3 * * 5-7").weekdays == frozenset({5, 6, 0})
    sunday = cron_parse("0 3 * * 7").next_after(datetime(2026, 11, 28, 12, 0))  # a Saturday
    assert sunday == datetime(2026, 11, 29, 3, 0)
    assert cron_parse("0 0 31 * *").next_after(datetime(2026, 11, 1)) == datetime(2026, 12, 31)
    assert cron_parse("0 0 29 2 *").next_after(datetime(2026, 3, 1)) == datetime(2028, 2, 29)


def test_benchmark_schedules_read_cron_fields_as_the_core_does():
    """The old validator went by celery's crontab, which refuses 7 for Sunday ("0 3 * * 7" is a valid crontab)."""
    assert check_cron("0", "3", "7").weekdays == frozenset({0})
    assert check_cron("30", "2", "1-5").weekdays == frozenset({1, 2, 3, 4, 5})
    for minute, hour, day_of_week, field in [
        ("０", "3", "0", "minute"),
        ("0", "３", "0", "hour"),
        ("0", "3", "１-５", "day_of_week"),
        ("0", "3", "8", "day_of_week"),
        ("*/15", "3", "0", "minute"),  # more than once an hour
        ("0", "24", "0", "hour"),
    ]:
        with pytest.raises(ValidationError) as caught:
            check_cron(minute, hour, day_of_week)
        assert field in caught.value.message_dict, (minute, hour, day_of_week)


def test_a_slot_names_its_fields_problems_weekdays_0_to_6_monday_first():
    assert slot_problems(every="week", hour=2, weekday=6, day=1) == {}
    assert slot_problems(every="week", hour=2, weekday=Weekday.SUNDAY, day=1) == {}
    problems = slot_problems(every="fortnight", hour=24, weekday=7, day=29)
    assert set(problems) == {"every", "hour", "weekday", "day"}
    assert set(slot_problems(every="day", hour=True, weekday="6", day=1.5)) == {"hour", "weekday", "day"}


def _slot(every, hour=2, weekday=Weekday.SUNDAY, day=1):
    return SimpleNamespace(every=every, hour=hour, weekday=weekday, day=day)


@pytest.mark.parametrize(
    ("slot", "now", "expected"),
    [
        (_slot(Every.DAY), datetime(2026, 11, 28, 1, 0), datetime(2026, 11, 28, 2, 0)),
        (_slot(Every.DAY), datetime(2026, 11, 28, 2, 0), datetime(2026, 11, 29, 2, 0)),
        (_slot(Every.WEEK), datetime(2026, 11, 28, 12, 0), datetime(2026, 11, 29, 2, 0)),  # Saturday → Sunday
        (_slot(Every.WEEK, weekday=Weekday.MONDAY), datetime(2026, 11, 30, 3, 0), datetime(2026, 12, 7, 2, 0)),
        (_slot(Every.MONTH, day=28), datetime(2026, 12, 28, 2, 0), datetime(2027, 1, 28, 2, 0)),
        (_slot(Every.MONTH), datetime(2026, 11, 28, 12, 0), datetime(2026, 12, 1, 2, 0)),
    ],
)
def test_a_slot_next_run_is_the_first_moment_after_now_and_the_slot_last_run_then(slot, now, expected):
    with timezone.override(PARIS):
        now = now.replace(tzinfo=PARIS)
        upcoming = slot_next(slot, now)
        assert upcoming.replace(tzinfo=None) == expected
        assert slot_last(slot, upcoming) == upcoming  # the same moment for beat and for the page
        assert slot_last(slot, upcoming - timedelta(minutes=1)) <= now


def test_intervals_are_due_once_their_time_passed_and_say_when_next():
    now = timezone.now()
    assert interval_due(None, timedelta(minutes=15), now)
    assert not interval_due(now - timedelta(minutes=14), timedelta(minutes=15), now)
    assert interval_due(now - timedelta(minutes=15), timedelta(minutes=15), now)
    assert interval_next(now - timedelta(days=1), timedelta(days=30), now) == now + timedelta(days=29)
    assert interval_next(now - timedelta(days=31), timedelta(days=30), now) == now  # late: at beat's next look
    assert interval_next(None, timedelta(days=30), now) == now


@pytest.mark.parametrize("form_class", [BackupScheduleForm, SelfTestScheduleForm])
def test_every_schedule_form_chooses_the_weekday_by_name(form_class):
    """The backup schedule took a number 0-6 (which is Sunday: 0 or 6?); every weekday is a dropdown now."""
    weekday = form_class().fields["weekday"]
    assert dict(weekday.choices)[Weekday.SUNDAY] == "Sunday" and dict(weekday.choices)[Weekday.MONDAY] == "Monday"
    assert 'value="6" selected>Sunday</option>' in str(form_class()["weekday"])
    for typed in ["7", "６", "-1", "Sunday"]:
        assert "weekday" in form_class(data={"every": "week", "weekday": typed, "day": "1", "hour": "2"}).errors
