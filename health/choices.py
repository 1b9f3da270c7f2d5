"""Choices for disk health: the state a read gives a disk, the self-tests Tarn starts."""

from django.db import models


class HealthState(models.TextChoices):
    OK = "ok", "OK"
    WATCH = "watch", "Watch"
    FAILING = "failing", "Failing"
    ASLEEP = "asleep", "Asleep"
    UNSUPPORTED = "unsupported", "No SMART"
    SILENT = "silent", "Not answering"


class SelfTestKind(models.TextChoices):
    SHORT = "short", "Short (about 2 minutes)"
    LONG = "long", "Long (the whole surface: hours)"


BADGE = {  # the badge class a state is drawn with
    HealthState.OK: "succeeded",
    HealthState.WATCH: "queued",
    HealthState.FAILING: "failed",
    HealthState.ASLEEP: "reverted",
    HealthState.UNSUPPORTED: "reverted",
    HealthState.SILENT: "failed",
}
READ_PARALLEL = 4  # disks of one host read side by side (each with its own timeout)
TEMPERATURE_DAYS = 30  # temperature history kept
POLL_MINUTES = 10  # a host's disks read this often (a disk asleep is skipped, not woken)


RUN_POLL_MINUTES = 2  # a host with self-tests under way is read this often, to start the next disks
