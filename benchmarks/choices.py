"""Choices for benchmark runs."""

from django.db import models


class RunStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    SUCCEEDED = "succeeded", "Succeeded"
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"

    @classmethod
    def active(cls) -> list[str]:
        return [cls.QUEUED, cls.RUNNING]


# A run may use at most this share of the target's free space (the pool must never fill).
FREE_SPACE_SHARE = 0.5
POLL_SECONDS = 2  # how often the worker checks a run's unit (and a cancel)
BANDWIDTH_EVERY = 3  # …and reads its bandwidth log every this many checks
