"""The ups app's words and numbers."""

from django.db import models

KEEP_DAYS = 7  # readings kept (one a minute)
CHART_HOURS = 24


class Mode(models.TextChoices):
    LOCAL = "local", "plugged into this NAS"
    NETCLIENT = "netclient", "served by another NAS (this one is its secondary)"


class Policy(models.TextChoices):
    LOW_BATTERY = "low_battery", "at low battery (the UPS says when)"
    RUNTIME = "runtime", "when the runtime left falls below N seconds"
    AFTER_SECONDS = "after_seconds", "after N seconds on battery"
