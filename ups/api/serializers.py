"""UPS API shapes: the UPS with its last reading (the passwords never read back), its readings, the request that
sets it."""

from rest_framework import serializers

from appliance.api.serializers import HostField, secret_field
from appliance.fields import ApiFloatField, ApiIntegerField
from ups.choices import Mode, Policy
from ups.models import Reading, Ups


class UpsSerializer(serializers.ModelSerializer):
    host = serializers.CharField(source="host.name")
    seconds = ApiIntegerField(read_only=True)
    charge = ApiFloatField(read_only=True, allow_null=True)
    runtime = ApiFloatField(read_only=True, allow_null=True)
    load = ApiFloatField(read_only=True, allow_null=True)

    class Meta:
        model = Ups
        fields = ["id", "host", "name", "mode", "driver", "port", "listen", "server", "policy", "seconds", "status",
                  "charge", "runtime", "load", "error", "read_at"]  # fmt: skip


class ReadingSerializer(serializers.ModelSerializer):
    charge = ApiFloatField(read_only=True, allow_null=True)
    runtime = ApiFloatField(read_only=True, allow_null=True)
    load = ApiFloatField(read_only=True, allow_null=True)

    class Meta:
        model = Reading
        fields = ["at", "status", "charge", "runtime", "load"]


class UpsRequest(serializers.Serializer):
    host = HostField()
    name = serializers.CharField(max_length=32)
    mode = serializers.ChoiceField(choices=Mode.choices, default=Mode.LOCAL)
    driver = serializers.CharField(max_length=32, required=False, allow_blank=True, default="")
    port = serializers.CharField(max_length=128, required=False, allow_blank=True, default="")
    listen = serializers.CharField(max_length=255, required=False, allow_blank=True, default="")
    server_host = HostField(required=False, allow_null=True, default=None)
    server = serializers.CharField(max_length=253, required=False, allow_blank=True, default="")
    password = secret_field(max_length=64, help_text="netclient with server: the password its admin gave.")
    policy = serializers.ChoiceField(choices=Policy.choices, default=Policy.LOW_BATTERY)
    seconds = ApiIntegerField(min_value=0, max_value=86400, default=0)
