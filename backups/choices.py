from django.db import models

from hostlib.backups import FOLDER


class Origin(models.TextChoices):
    MANUAL = "manual", "Made on demand"
    SCHEDULED = "scheduled", "Scheduled"
    PRE_RESTORE = "pre-restore", "Kept before a restore"
    UPLOADED = "uploaded", "Uploaded to restore"


PASSPHRASE_MIN, PASSPHRASE_MAX = 12, 1024  # characters: it guards every secret Tarn keeps
KEEP_DEFAULT, KEEP_MAX = 7, 365
PRE_RESTORE_KEEP = 3  # the states kept before a restore (not counted against the admin's keep)
NAS_FOLDER = FOLDER  # where a NAS keeps the backups pushed to it (root only)
SUFFIX = ".tarnbackup"
MADE_ELSEWHERE = "made elsewhere"  # typed to restore a backup this Tarn did not make (backups.signing)
