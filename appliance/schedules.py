"""When things run, for every app that runs things at times: calendar slots, cron lines and plain intervals.

- A calendar slot (every day, week or month, at an hour; backups and disk self-tests) names the newest moment it
  came (slot_last: what beat compares with the last start) and the next (slot_next: what a page shows);
  slot_problems says what is wrong with one, by field.
- A cron line (replication, benchmarks) is parsed (ASCII digits only, day of week 0-7 with both 0 and 7 Sunday, as
  crontab(5) has it), checked (a line that can never fire, or fires more often than an app allows, is refused naming
  the field) and asked when it fires next or whether a time came. The day of month and the day of week must both
  match (celery's crontab reads them so too; crontab(5) takes either when both are restricted: say "1-7" and "1" for
  the first Monday, not one or the other).
- An interval (snapshot tasks every N minutes, scrubs every N days) is due once that long passed since the last
  run (interval_due) and next runs then (interval_next)."""

import re
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Protocol

from django.utils import timezone

from appliance.choices import Every, Weekday

FIELDS = (  # name, first value, last value
    ("minute", 0, 59),
    ("hour", 0, 23),
    ("day of month", 1, 31),
    ("month", 1, 12),
    ("day of week", 0, 7),
)
_PART = re.compile(r"(\*|([0-9]{1,2})(?:-([0-9]{1,2}))?)(?:/([0-9]{1,2}))?")  # ASCII: \d takes any script's digits
_LINE = re.compile(r"[0-9*/,\- ]{1,200}")  # no tab, newline or other script's space or digit
LEAP_CYCLE_DAYS = 28 * 366  # every (day, month, weekday) that exists at all comes within 28 years


class CronError(ValueError):
    """A cron line that cannot be used; field names which of the five is wrong ("" for the line as a whole)."""

    def __init__(self, message: str, field: str = ""):
        super().__init__(message)
        self.field = field


def cron_field(text: str, name: str) -> frozenset[int]:
    """One field (`*`, `5`, `1-5`, `*/15`, `0-30/10`, lists of those joined by commas) as the values it matches."""
    first, last = next((lo, hi) for n, lo, hi in FIELDS if n == name)
    values: set[int] = set()
    for part in text.split(","):
        match = _PART.fullmatch(part)
        if not match:
            raise CronError(f"The {name}: digits 0-9, *, ranges (1-5), steps (*/15) and lists (0,30) only.", name)
        star, low, high, step = match.group(1) == "*", match.group(2), match.group(3), match.group(4)
        lo, hi = (first, last) if star else (int(low), int(high if high is not None else low))
        if step is not None and not star and high is None:
            hi = last  # "5/15": from 5 to the end, every 15
        if not (first <= lo <= last and first <= hi <= last):
            raise CronError(f"The {name}: {part} is outside {first}-{last}.", name)
        if lo > hi:
            raise CronError(f"The {name}: {part} runs backwards.", name)
        every = int(step) if step is not None else 1
        if every == 0:
            raise CronError(f"The {name}: a step of 0.", name)
        values.update(range(lo, hi + 1, every))
    if name == "day of week" and 7 in values:
        values = (values - {7}) | {0}  # 7 is Sunday too
    return frozenset(values)


@dataclass(frozen=True)
class Cron:
    """A parsed cron line: the values each field matches (day of week 0-6, Sunday 0)."""

    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]

    def on(self, day: date) -> bool:
        return day.day in self.days and day.month in self.months and day.isoweekday() % 7 in self.weekdays

    def times(self) -> list[tuple[int, int]]:
        """(hour, minute) it fires at on a day it fires, in order."""
        return [(h, m) for h in sorted(self.hours) for m in sorted(self.minutes)]

    def matches(self, at: datetime) -> bool:
        return at.minute in self.minutes and at.hour in self.hours and self.on(at.date())

    def next_after(self, after: datetime) -> datetime | None:
        """The first time it fires after `after` (naive or aware, in after's own zone), or None if never."""
        start = after.replace(second=0, microsecond=0)
        day = start.date()
        for _ in range(LEAP_CYCLE_DAYS + 1):
            if self.on(day):
                for hour, minute in self.times():
                    at = start.replace(year=day.year, month=day.month, day=day.day, hour=hour, minute=minute)
                    if at > after:
                        return at
            day += timedelta(days=1)
        return None

    def shortest_gap(self) -> int:
        """Minutes between two firings, at the closest (across midnight too)."""
        marks = [60 * h + m for h, m in self.times()]
        gaps = [b - a for a, b in zip(marks, marks[1:], strict=False)] + [marks[0] + 1440 - marks[-1]]
        return min(gaps)


def cron_parse(line: str, *, min_gap: int = 0) -> Cron:
    """A cron line (minute hour day-of-month month day-of-week) checked: five fields, each as cron_field reads it,
    a date it can fire on at all (`0 0 31 2 *` cannot), and with min_gap, no two firings closer than that many
    minutes. CronError naming the field, else."""
    if not isinstance(line, str) or not _LINE.fullmatch(line):
        raise CronError(
            "Digits 0-9, *, /, -, commas and spaces only: minute hour day-of-month month day-of-week, e.g. 0 2 * * *."
        )
    parts = line.split()
    if len(parts) != 5:
        raise CronError("Five fields: minute hour day-of-month month day-of-week, e.g. 0 2 * * * (02:00 daily).")
    cron = Cron(*(cron_field(text, name) for text, (name, _, _) in zip(parts, FIELDS, strict=True)))
    if cron.next_after(datetime(2000, 1, 1)) is None:
        raise CronError(
            "No date has this day of month in these months on these days of the week: it never runs.", "day of month"
        )
    if min_gap and cron.shortest_gap() < min_gap:
        raise CronError(f"It runs {cron.shortest_gap()} minute(s) apart; at least {min_gap} minutes, please.", "minute")
    return cron


def cron_due(cron: Cron, last_run_at: datetime | None, now: datetime, *, catch_up: int = 60) -> bool:
    """Whether a time the cron names has come since last_run_at, looking back catch_up minutes at most (a time
    missed for longer waits for the next one). now and last_run_at in the zone the cron is meant in."""
    at = now.replace(second=0, microsecond=0)
    for _ in range(catch_up):
        if last_run_at is not None and at <= last_run_at:
            return False
        if cron.matches(at):
            return True
        at -= timedelta(minutes=1)
    return False


# --- calendar slots ---------------------------------------------------------------------------------------------
class Slot(Protocol):
    """Any row with a calendar slot's fields (a backup schedule, a self-test schedule)."""

    every: str
    hour: int
    weekday: int  # Monday 0 (Weekday)
    day: int  # 1-28: every month has it


def _whole(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def slot_problems(*, every: str, hour: int, weekday: int, day: int) -> dict[str, str]:
    """What is wrong with a calendar slot, by field."""
    problems = {}
    if every not in Every.values:
        problems["every"] = f"Choose one of: {', '.join(Every.values)}."
    if not _whole(hour) or not 0 <= hour <= 23:
        problems["hour"] = "An hour from 0 to 23."
    if not _whole(day) or not 1 <= day <= 28:
        problems["day"] = "A day from 1 to 28 (every month has it)."
    if not _whole(weekday) or weekday not in Weekday.values:
        problems["weekday"] = "A day of the week: 0 (Monday) to 6 (Sunday)."
    return problems


def slot_last(slot: Slot, now: datetime) -> datetime:
    """The newest moment the slot names at or before now (local time; the first of a doubled hour when the clocks
    go back, so one slot is one moment)."""
    local = timezone.localtime(now)
    at = local.replace(minute=0, second=0, microsecond=0, hour=slot.hour, fold=0)
    if slot.every == Every.DAY:
        return at if at <= local else at - timedelta(days=1)
    if slot.every == Every.WEEK:
        at -= timedelta(days=(local.weekday() - slot.weekday) % 7)
        return at if at <= local else at - timedelta(days=7)
    at = at.replace(day=slot.day)
    if at > local:  # last month's
        at = (at.replace(day=1) - timedelta(days=1)).replace(day=slot.day)
    return at


def slot_cron(slot: Slot) -> Cron:
    """The slot as the cron line that names the same moments (a cron's weekday counts from Sunday)."""
    days = {Every.DAY: "* * *", Every.WEEK: f"* * {(slot.weekday + 1) % 7}", Every.MONTH: f"{slot.day} * *"}
    return cron_parse(f"0 {slot.hour} {days[slot.every]}")


def slot_next(slot: Slot, now: datetime | None = None) -> datetime:
    """The next moment the slot names after now (local time)."""
    return slot_cron(slot).next_after(timezone.localtime(now))


# --- intervals --------------------------------------------------------------------------------------------------
def interval_due(last_run_at: datetime | None, every: timedelta, now: datetime) -> bool:
    """Never run, or at least `every` since it last did."""
    return last_run_at is None or now - last_run_at >= every


def interval_next(last_run_at: datetime | None, every: timedelta, now: datetime | None = None) -> datetime:
    """When it runs next: `every` after its last run, or now (beat's next look) when that moment passed or it never
    ran."""
    now = now or timezone.now()
    return now if last_run_at is None else max(now, last_run_at + every)
