"""Choices for tuning: kinds of settings, change sets and their life."""

from django.db import models


class SettingKind(models.TextChoices):
    SYSCTL = "sysctl", "Kernel (sysctl)"
    ZFS = "zfs", "ZFS module parameter"
    SERVICE = "service", "Samba / NFS server"


# What one setting may be set to by hand (the server settings have their own page under Shares).
KERNEL_KINDS = [(SettingKind.SYSCTL.value, SettingKind.SYSCTL.label), (SettingKind.ZFS.value, SettingKind.ZFS.label)]


class ChangeKind(models.TextChoices):
    PROFILE = "profile", "Base tuning"
    TUNABLE = "tunable", "Single setting"
    MTU = "mtu", "MTU"
    BRIDGE = "bridge", "Bridge"
    UNBRIDGE = "unbridge", "Bridge removed"


class ChangeStatus(models.TextChoices):
    PLANNING = "planning", "Reading the host"
    PLANNED = "planned", "Planned (nothing changed yet)"
    APPLYING = "applying", "Applying"
    PENDING = "pending", "Waiting for Keep"  # a network change, its restore armed on the host
    APPLIED = "applied", "Applied"
    KEPT = "kept", "Kept"
    ROLLED_BACK = "rolled_back", "Rolled back by the host"
    REVERTED = "reverted", "Reverted"
    FAILED = "failed", "Failed"

    @classmethod
    def live(cls) -> list[str]:
        """Its settings are in effect on the host (and in Tarn's files)."""
        return [cls.APPLIED, cls.KEPT]


class Action(models.TextChoices):
    SET = "set", "Set"
    SAME = "same", "Already set"
    SKIP = "skip", "Skipped"


# Seconds before an unconfirmed network change is undone by the host (TrueNAS uses 60).
ROLLBACK_SECONDS_DEFAULT = 60
ROLLBACK_SECONDS_MIN, ROLLBACK_SECONDS_MAX = 20, 600
JUMBO_MTU = 9000
