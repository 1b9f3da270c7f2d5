"""Choices for the appliance app, and the calendar words every app that runs things at times shares."""

from django.db import models


class Role(models.TextChoices):
    ADMIN = "admin", "Admin"  # everything
    OPERATOR = "operator", "Operator"  # day-to-day: datasets, snapshots, shares, benchmarks
    VIEWER = "viewer", "Viewer"  # read-only

    @classmethod
    def rank(cls, role: str) -> int:
        return {cls.VIEWER: 0, cls.OPERATOR: 1, cls.ADMIN: 2}[role]


class TransportKind(models.TextChoices):
    LOCAL = "local", "This machine"
    SSH = "ssh", "SSH"


class OperationStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    SUCCEEDED = "succeeded", "Succeeded"
    FAILED = "failed", "Failed"

    @classmethod
    def active(cls) -> list[str]:
        return [cls.QUEUED, cls.RUNNING]


class RunStatus(models.TextChoices):
    """The one status vocabulary of a run row, in every app: a benchmark run, a replication task's run, a self-test
    run. A run tied to an Operation reads its status from it (appliance.runs): the Operation's words, and cancelled
    for a run an admin stopped (its Operation ends well). What a run found beyond that (nothing new to send, a disk's
    verdict, the figures) is its own field, never a word of this list."""

    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    SUCCEEDED = "succeeded", "Succeeded"
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"

    @classmethod
    def active(cls) -> list[str]:
        return [cls.QUEUED, cls.RUNNING]

    @classmethod
    def ended(cls) -> list[str]:
        return [cls.SUCCEEDED, cls.FAILED, cls.CANCELLED]


RUN_ENDS = [(value, label) for value, label in RunStatus.choices if value in RunStatus.ended()]  # a run's own end


class AccountKind(models.TextChoices):
    """A user or a group of a host (local, or a directory's): what a directory lists and an ACL names."""

    USER = "user", "user"
    GROUP = "group", "group"


class AuditKind(models.TextChoices):
    REQUEST = "request", "Request"
    COMMAND = "command", "Host command"


class Every(models.TextChoices):
    """How often a calendar slot comes (appliance.schedules: slot_last, slot_next)."""

    DAY = "day", "Every day"
    WEEK = "week", "Every week"
    MONTH = "month", "Every month"


class Weekday(models.IntegerChoices):
    """A calendar slot's day of the week, as Python counts them (Monday 0). A cron line counts from Sunday (0 or 7):
    a form shows the names, never the numbers."""

    MONDAY = 0, "Monday"
    TUESDAY = 1, "Tuesday"
    WEDNESDAY = 2, "Wednesday"
    THURSDAY = 3, "Thursday"
    FRIDAY = 4, "Friday"
    SATURDAY = 5, "Saturday"
    SUNDAY = 6, "Sunday"
