"""Choices for the appliance app."""

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


class AuditKind(models.TextChoices):
    REQUEST = "request", "Request"
    COMMAND = "command", "Host command"
