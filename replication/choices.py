"""Choices for pairs, tasks and their runs."""

from django.db import models


class PairStatus(models.TextChoices):
    PAIRING = "pairing", "Pairing"
    PAIRED = "paired", "Paired"
    FAILED = "failed", "Pairing failed"
    UNPAIRING = "unpairing", "Unpairing"


class Direction(models.TextChoices):
    PUSH = "push", "Push (the source dials the target)"
    PULL = "pull", "Pull (the target dials the source)"


class Transport(models.TextChoices):
    SSH = "ssh", "SSH (encrypted; aes128-gcm)"
    TCP = "tcp", "SSH for control, the data in the clear over TCP (a trusted link only)"


class RunOutcome(models.TextChoices):
    """What a run found beyond its status (which is its Operation's, appliance.runs); none when it sent what was
    new, or failed on its own."""

    NOTHING = "nothing", "Nothing new"
    EMPTY = "empty", "No snapshot to send"
    STOPPED = "stopped", "Stopped (needs an admin)"


EMPTY_RUNS_ALERT = 3  # runs in a row that found no snapshot to send (and none sent ever) before the alert
KEEP_MAX = 100_000  # snapshots a task may keep per dataset (ZFS lists a million; Windows shows 512)
KEEP_HOURS_MAX = 24 * 366
MIN_CRON_GAP = 5  # minutes between two runs at the closest (the every_minutes rule too)
