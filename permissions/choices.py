"""The permissions app's words: a walk's states, the templates an admin starts an ACL from."""

from django.db import models


class WalkStatus(models.TextChoices):
    COUNTING = "counting", "counting what would change"
    PREVIEWED = "previewed", "previewed: waiting for the go-ahead"
    APPLYING = "applying", "applying"
    APPLIED = "applied", "applied"
    STOPPED = "stopped", "stopped"
    FAILED = "failed", "failed"


class QuotaKind(models.TextChoices):
    USER = "user", "user"
    GROUP = "group", "group"
    PROJECT = "project", "project (a folder and what is inside)"


class Template(models.TextChoices):
    PRIVATE = "private", "Private to the owner"
    GROUP_SHARED = "group-shared", "Shared by a group (set-gid, inherited)"
    PUBLIC_READ = "public-read", "Everyone reads, the owner writes"
    HOMES = "homes", "Home folders (each user reaches only their own)"


# What each template sets: (owner, group, other) permissions, set-gid, and whether new files inherit (default ACL).
TEMPLATES = {
    Template.PRIVATE: {
        "owner_perms": "rwx",
        "group_perms": "---",
        "other_perms": "---",
        "setgid": False,
        "defaults": False,
    },
    Template.GROUP_SHARED: {
        "owner_perms": "rwx",
        "group_perms": "rwx",
        "other_perms": "---",
        "setgid": True,
        "defaults": True,
    },
    Template.PUBLIC_READ: {
        "owner_perms": "rwx",
        "group_perms": "r-x",
        "other_perms": "r-x",
        "setgid": False,
        "defaults": True,
    },
    # The folder that holds the homes: its group traverses it (--x) but cannot list who else has one; each user's
    # own folder is then made private to them (Tarn's private share preset makes those).
    Template.HOMES: {
        "owner_perms": "rwx",
        "group_perms": "--x",
        "other_perms": "---",
        "setgid": False,
        "defaults": False,
    },
}

PREVIEW_MINUTES = 30  # a preview older than this is counted again before an apply
WALK_POLL_SECONDS = 1.0

NO_QUOTA = -1.0  # QuotaUse.percent without a quota: below every percentage, so one index sorts the fullest first
QUOTA_READ_MINUTES = 15  # how often every host's quotas are read (the report, the alerts)
QUOTA_POINT_DAYS = 400  # how long a day's point stays (the chart over time)

# Mount points of the operating system (root on ZFS): their folders are not offered to the ACL editor or quotas'
# projects; a walk from / would re-own the system.
SYSTEM_TREES = ("/boot", "/etc", "/usr", "/var", "/root", "/lib", "/bin", "/sbin", "/run")  # and all below them
SYSTEM_MOUNTS = ("/", "/tmp", "/opt", *SYSTEM_TREES)


def is_system_mount(path: str) -> bool:
    return path in SYSTEM_MOUNTS or any(path.startswith(f"{m}/") for m in SYSTEM_TREES)
