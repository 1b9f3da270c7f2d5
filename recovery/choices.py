"""The recovery app's words and numbers: how much a page shows, how far a versions pass looks, a restore's states."""

from django.db import models

PAGE = 200  # entries a page of a folder
VERSIONS_PASS = 100  # snapshots a versions pass looks into by default
VERSIONS_MOST = 1000  # …and at most, when the admin raises it
MAX_DEPTH = 256  # folders deep a path may go
MAX_NAME = 255  # bytes in one name (ZFS's limit)
SAFETY_PREFIX = "tarn-restore"  # the snapshot taken of the live dataset before a restore in place
SAFETY_KEEP_DAYS = 7  # …kept this long (held ones stay), pruned by beat as a schedule's keep_days would
POLL_SECONDS = 1.0
QUICK_SECONDS, QUICK_POLLS = 0.25, 8  # the first polls of a restore, 2 s in all


class How(models.TextChoices):
    PLACE = "place", "in place (after a safety snapshot)"
    BESIDE = "beside", "beside it, as <name>.restored-<snapshot>"


class RestoreStatus(models.TextChoices):
    RUNNING = "running", "running"
    DONE = "done", "done"
    STOPPED = "stopped", "stopped"
    FAILED = "failed", "failed"
