"""A pool's and each dataset's use over time (CapacityPoint: at most one an hour, from the inventory Tarn already
reads) and the forecast made from it (Forecast: one row per pool and dataset, remade every hour, read by the pages,
the API and the alert)."""

from django.db import models

from appliance.models import Host
from capacity.choices import ForecastState


class CapacityPoint(models.Model):
    """Bytes used of a total at one time: a pool's allocated of its size (dataset blank), or a dataset's used of its
    used + available (what its quota or the pool's free space lets it reach)."""

    host = models.ForeignKey(Host, on_delete=models.CASCADE, related_name="capacity_points")
    pool = models.CharField(max_length=255)
    dataset = models.CharField(max_length=255, blank=True)
    at = models.DateTimeField()
    used = models.BigIntegerField()
    total = models.BigIntegerField()

    class Meta:
        indexes = [models.Index(fields=["host", "at"], name="capacity_point_host_at")]

    def __str__(self):
        return f"{self.dataset or self.pool} at {self.at:%Y-%m-%d %H:%M}"


class Forecast(models.Model):
    """When a pool (dataset blank) or dataset reaches 80, 90 and 100 % of its total at its growth rate (bytes a day,
    with a low and a high bound), less what the snapshot schedules' retention will free; days None: not within
    the horizon. soonest/latest: the days to full at the high and at the low rate."""

    host = models.ForeignKey(Host, on_delete=models.CASCADE, related_name="forecasts")
    pool = models.CharField(max_length=255)
    dataset = models.CharField(max_length=255, blank=True)
    state = models.CharField(max_length=12, choices=ForecastState.choices)
    computed_at = models.DateTimeField()
    used = models.BigIntegerField()
    total = models.BigIntegerField()
    per_day = models.FloatField(default=0)
    per_day_low = models.FloatField(default=0)
    per_day_high = models.FloatField(default=0)
    days_80 = models.FloatField(null=True, blank=True)
    days_90 = models.FloatField(null=True, blank=True)
    days_100 = models.FloatField(null=True, blank=True)
    soonest = models.FloatField(null=True, blank=True)
    latest = models.FloatField(null=True, blank=True)
    freed = models.BigIntegerField(default=0, help_text="Bytes the snapshot schedules will free within the horizon.")
    jumps = models.PositiveIntegerField(default=0, help_text="Big one-off copies or deletes left out of the trend.")
    points = models.PositiveIntegerField(default=0)
    history_days = models.FloatField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["host", "pool", "dataset"], name="forecast_one_per_subject"),
        ]
        indexes = [models.Index(fields=["host", "days_100"], name="forecast_host_full")]

    def __str__(self):
        return f"forecast of {self.dataset or self.pool}"

    @property
    def name(self) -> str:
        return self.dataset or self.pool

    @property
    def percent(self) -> float:
        return 100 * self.used / self.total if self.total else 0.0
