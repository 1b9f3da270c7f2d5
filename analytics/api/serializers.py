"""Alert API shapes: secrets are write-only (never returned)."""

from rest_framework import serializers

from analytics.choices import Level
from analytics.models import Alert, Channel
from appliance.api.serializers import ModelSerializer
from appliance.fields import ApiFloatField, ApiIntegerField
from appliance.validators import refuse_bidi


class AlertSerializer(ModelSerializer):
    host = serializers.SlugRelatedField(slug_field="name", read_only=True)

    class Meta:
        model = Alert
        fields = ["id", "host", "rule", "subject", "level", "message", "raised_at", "cleared_at", "deliveries"]
        read_only_fields = fields


class ChannelSerializer(ModelSerializer):
    smtp_password = serializers.CharField(
        write_only=True,
        required=False,
        allow_blank=True,
        max_length=254,
        help_text="Write-only. Empty or left out keeps the saved one while smtp_host, smtp_port and smtp_username stay "
        "the same; a change of those needs it again.",
    )
    secret = serializers.CharField(write_only=True, required=False, allow_blank=True, max_length=128)

    class Meta:
        model = Channel
        fields = [
            "id",
            "name",
            "kind",
            "enabled",
            "min_level",
            "smtp_host",
            "smtp_port",
            "smtp_security",
            "smtp_username",
            "smtp_password",
            "sender",
            "recipients",
            "url",
            "allow_private",
            "secret",
            "last_result",
            "last_at",
        ]
        read_only_fields = ["id", "last_result", "last_at"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        refuse_bidi(self.fields, "name")  # built from the model (unique), so added to the built field


class RuleSerializer(serializers.Serializer):
    key = serializers.CharField(read_only=True)
    title = serializers.CharField(read_only=True)
    enabled = serializers.BooleanField()
    level = serializers.ChoiceField(choices=Level.choices)
    threshold = ApiFloatField(required=False, allow_null=True)
    unit = serializers.CharField(read_only=True)


class SamplerSettingSerializer(serializers.Serializer):
    """How often every host is sampled and how long samples and averages are kept (limits in the service)."""

    interval = ApiIntegerField(help_text="Seconds between samples, 5–300.")
    raw_hours = ApiIntegerField(help_text="Hours every sample is kept, 1–168.")
    rollup_days = ApiIntegerField(help_text="Days the 5-minute and hourly averages are kept, 1–365.")
