"""The capacity app's words and numbers: how much history a forecast needs and looks at, how far ahead it says."""

from django.db import models

FIT_DAYS = 30  # a forecast fits this many days of history
MIN_HISTORY_HOURS = 48  # and says nothing before it has this much (two days: a weekend's quiet is not a trend)
MIN_POINTS = 8  # and points to fit (an hour apart in use: 48 by then)
HORIZON_DAYS = 5 * 365  # past this, "not within five years"
KEEP_DAYS = 90  # points are kept this long (a forecast reads 30; the chart shows up to 90)
POINT_SECONDS = 3600  # at most one point an hour per pool and dataset
LEVELS = (80, 90, 100)


class ForecastState(models.TextChoices):
    GROWING = "growing", "growing"
    FLAT = "flat", "not growing"
    LEARNING = "learning", "learning (less than two days of history)"
