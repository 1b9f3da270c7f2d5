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
    BOND = "bond", "Bond"
    UNBOND = "unbond", "Bond removed"
    VLAN = "vlan", "VLAN"
    UNVLAN = "unvlan", "VLAN removed"


NETWORK_KINDS = (
    ChangeKind.MTU,
    ChangeKind.BRIDGE,
    ChangeKind.UNBRIDGE,
    ChangeKind.BOND,
    ChangeKind.UNBOND,
    ChangeKind.VLAN,
    ChangeKind.UNVLAN,
)
HELD_KINDS = (ChangeKind.BOND, ChangeKind.UNBOND, ChangeKind.VLAN, ChangeKind.UNVLAN)  # networkd kept off their links


class BondMode(models.TextChoices):
    ACTIVE_BACKUP = "active-backup", "active-backup (one port carries, the other takes over; any switch)"
    LACP = "802.3ad", "802.3ad / LACP (all ports carry; the switch must have an LACP group)"
    ALB = "balance-alb", "balance-alb (all ports carry, no switch setup; not with every switch)"


class LacpRate(models.TextChoices):
    DEFAULT = "", "the kernel's default (slow)"
    SLOW = "slow", "slow (every 30 s)"
    FAST = "fast", "fast (every second)"


class HashPolicy(models.TextChoices):
    DEFAULT = "", "the kernel's default (layer2)"
    LAYER2 = "layer2", "layer2 (MAC addresses)"
    LAYER23 = "layer2+3", "layer2+3 (MAC and IP addresses)"
    LAYER34 = "layer3+4", "layer3+4 (IP addresses and ports: spreads one client's connections)"
    ENCAP23 = "encap2+3", "encap2+3 (inner headers of tunnels)"
    ENCAP34 = "encap3+4", "encap3+4 (inner headers of tunnels, with ports)"


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
BOND_MIIMON_DEFAULT = 100  # ms: carrier checked ten times a second (what failover costs at most, in packets' time)
