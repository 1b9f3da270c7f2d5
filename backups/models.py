from django.conf import settings
from django.db import models

from appliance.choices import Every, Weekday
from appliance.models import Host
from appliance.schedules import slot_next
from backups.choices import KEEP_DEFAULT, Origin


class Backup(models.Model):
    """One backup file in DATA_DIR/backups: sealed (see backups.archive), never written unsealed. Its manifest is the
    part that is not secret (what it holds, counted); checked: the dry run of a restore, when one was asked for."""

    name = models.CharField(max_length=100, unique=True, help_text="Its file name, without the folder.")
    origin = models.CharField(max_length=12, choices=Origin.choices)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    size = models.BigIntegerField(default=0)
    sha256 = models.CharField(max_length=64, blank=True)
    manifest = models.JSONField(default=dict, blank=True)
    pushed_to = models.ForeignKey(Host, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    push_error = models.CharField(max_length=500, blank=True)
    checked = models.JSONField(default=dict, blank=True, help_text="The dry run's diff, when a restore was checked.")
    checked_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self):
        return self.name


class BackupSchedule(models.Model):
    """The one schedule (a single row): when, how many to keep, where to push. The passphrase is never stored: the
    backups are sealed to a key of their own, which is stored only wrapped with the passphrase (backups.archive)."""

    enabled = models.BooleanField(default=False)
    every = models.CharField(max_length=8, choices=Every.choices, default=Every.DAY)
    weekday = models.PositiveSmallIntegerField(default=Weekday.SUNDAY, choices=Weekday.choices, help_text="Weekly.")
    day = models.PositiveSmallIntegerField(default=1, help_text="Day of the month, 1–28 (monthly).")
    hour = models.PositiveSmallIntegerField(default=1, help_text="Hour of the day, 0–23 (the server's time zone).")
    keep = models.PositiveSmallIntegerField(default=KEEP_DEFAULT, help_text="Backups kept here (and on the NAS).")
    push_host = models.ForeignKey(
        Host,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        help_text="A NAS that also keeps each backup (in /var/lib/tarn-backups, root only).",
    )
    include_series = models.BooleanField(default=False, help_text="Also keep the analytics series (larger).")
    wrapped_key = models.TextField(
        blank=True, help_text="The backups' key line: their key, sealed with the passphrase."
    )
    recipient = models.CharField(max_length=100, blank=True, help_text="The backups' public key: seals, opens nothing.")
    key_set_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_started_at = models.DateTimeField(null=True, blank=True)
    last_error = models.CharField(max_length=500, blank=True)
    last_error_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=models.Q(hour__lte=23, day__gte=1, day__lte=28, weekday__lte=6),
                name="backup_slot_in_range",
            )
        ]

    def __str__(self):
        return f"configuration backup {self.get_every_display().lower()}"

    @property
    def next_run(self):
        """When its slot next comes (local time), or None while it is off."""
        return slot_next(self) if self.enabled else None
