"""A host's UPS (Ups: how it is reached, the shutdown policy, the monitor passwords sealed by the vault; the last
reading) and its readings (one a minute, kept KEEP_DAYS days, for the chart)."""

from django.db import models

from appliance.models import Host
from ups.choices import Mode, Policy


class Ups(models.Model):
    host = models.OneToOneField(Host, on_delete=models.CASCADE, related_name="ups")
    name = models.CharField(max_length=32)
    mode = models.CharField(max_length=10, choices=Mode.choices, default=Mode.LOCAL)
    driver = models.CharField(max_length=32, blank=True)
    port = models.CharField(max_length=128, blank=True)
    listen = models.CharField(max_length=255, blank=True, help_text="Addresses other NAS reach upsd on, by spaces.")
    server = models.CharField(max_length=253, blank=True, help_text="netclient: the NAS serving the UPS.")
    policy = models.CharField(max_length=16, choices=Policy.choices, default=Policy.LOW_BATTERY)
    seconds = models.PositiveIntegerField(default=0)
    password = models.TextField(help_text="This NAS's monitor password, sealed (appliance.vault).")
    secondary_password = models.TextField(blank=True, help_text="The secondaries' password (a primary's), sealed.")
    status = models.JSONField(default=list, help_text="NUT's words as last read: OL, OB, LB, RB…")
    charge = models.FloatField(null=True, blank=True)
    runtime = models.FloatField(null=True, blank=True)
    load = models.FloatField(null=True, blank=True)
    error = models.CharField(max_length=300, blank=True, help_text="Why the last read failed ('' when it did not).")
    read_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name, verbose_name_plural = "UPS", "UPSes"

    def __str__(self):
        return f"UPS {self.name} on {self.host}"


class Reading(models.Model):
    ups = models.ForeignKey(Ups, on_delete=models.CASCADE, related_name="readings")
    at = models.DateTimeField(db_index=True)
    status = models.CharField(max_length=64)
    charge = models.FloatField(null=True)
    runtime = models.FloatField(null=True)
    load = models.FloatField(null=True)

    class Meta:
        ordering = ["at"]

    def __str__(self):
        return f"{self.ups.name} at {self.at:%Y-%m-%d %H:%M}: {self.status}"
