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


class RunStatus(models.TextChoices):
    RUNNING = "running", "Running"
    SUCCEEDED = "succeeded", "Succeeded"
    NOTHING = "nothing", "Nothing new"
    STOPPED = "stopped", "Stopped (needs an admin)"
    FAILED = "failed", "Failed"


FINISHED = (RunStatus.SUCCEEDED, RunStatus.NOTHING, RunStatus.STOPPED, RunStatus.FAILED)
