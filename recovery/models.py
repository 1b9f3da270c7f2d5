"""A restore out of a snapshot (Restore: what, how, its progress as the host's unit wrote it, whether a stop was
asked, the safety snapshot taken first). What the pages show of a snapshot's files is read from the NAS, never kept:
file names are data."""

from django.conf import settings
from django.db import models

from appliance.models import Host, Operation
from recovery.choices import How, RestoreStatus


class Restore(models.Model):
    host = models.ForeignKey(Host, on_delete=models.CASCADE, related_name="restores")
    dataset = models.CharField(max_length=255)
    snapshot = models.CharField(max_length=255)
    path = models.TextField(help_text="Hex of each name's bytes, joined by '/'.")
    shown = models.TextField(help_text="The path as text (anything not printable escaped).")
    how = models.CharField(max_length=8, choices=How.choices)
    name = models.CharField(max_length=1024, blank=True, help_text="Beside: the new name, as text.")
    status = models.CharField(max_length=8, choices=RestoreStatus.choices, default=RestoreStatus.RUNNING)
    progress = models.JSONField(default=dict, help_text="The host's last word: bytes, total, files, folders…")
    safety = models.CharField(max_length=255, blank=True, help_text="The snapshot taken before a restore in place.")
    stop_requested = models.BooleanField(default=False)
    operation = models.ForeignKey(Operation, null=True, on_delete=models.SET_NULL, related_name="+")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-pk"]

    def __str__(self):
        return f"restore of {self.dataset}@{self.snapshot}/{self.shown}"
