"""Choices for shares: SMB presets and NFS squash modes."""

from django.db import models


class SmbPreset(models.TextChoices):
    GENERAL = "general", "General purpose"
    MULTI_USER = "multi_user", "Multi-user (group-writable, permissions inherited)"
    TIME_MACHINE = "time_machine", "Time Machine (macOS backups)"
    PRIVATE = "private", "Private per user (each user sees only their own folder)"
    ARCHIVE = "archive", "Read-only archive"


class NfsSquash(models.TextChoices):
    ROOT = "root_squash", "root_squash (client root becomes nobody)"
    ALL = "all_squash", "all_squash (everyone becomes the anonymous user)"
    NONE = "no_root_squash", "no_root_squash (client root is root here: trusted hosts only)"


# Each risky NFS export needs its own yes: the risk (nfs.export_risks) and the field that says it.
NFS_CONFIRMATION_FIELDS = {"everyone": "wildcard_ok", "root": "root_ok", "async": "async_ok"}
