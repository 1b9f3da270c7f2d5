"""Capacity API shapes."""

from rest_framework import serializers

from appliance.fields import ApiBigIntegerField, ApiIntegerField
from capacity.models import Forecast


class ForecastSerializer(serializers.ModelSerializer):
    host = serializers.SlugRelatedField(slug_field="name", read_only=True)
    percent = serializers.FloatField(read_only=True, help_text="% of the total used now")

    class Meta:
        model = Forecast
        fields = [
            "id", "host", "pool", "dataset", "state", "computed_at", "used", "total", "percent", "per_day",
            "per_day_low", "per_day_high", "days_80", "days_90", "days_100", "soonest", "latest", "freed", "jumps",
            "points", "history_days",
        ]  # fmt: skip
        read_only_fields = fields
        extra_kwargs = {
            "dataset": {"help_text": "Empty for the pool itself."},
            "per_day": {"help_text": "Growth in bytes a day (the trend, one-off copies left out)."},
            "days_100": {"help_text": "Days from computed_at until full; null: not within five years."},
            "soonest": {"help_text": "Days until full at the high bound of the growth."},
            "latest": {"help_text": "Days until full at the low bound; null: not within five years."},
        }


class PointSerializer(serializers.Serializer):
    at = serializers.DateTimeField()
    used = ApiBigIntegerField()
    total = ApiBigIntegerField()


class SeriesQuery(serializers.Serializer):
    days = ApiIntegerField(min_value=1, max_value=90, default=30)
