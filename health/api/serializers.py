"""Disk health API shapes."""

from rest_framework import serializers
from rest_framework.serializers import ModelSerializer

from appliance.api.serializers import HostField, RunStatusField
from appliance.choices import Every
from appliance.fields import WEEKDAY_HELP, ApiIntegerField
from health.choices import SelfTestKind
from health.models import DiskHealth, SelfTestRun, SelfTestSchedule


class DiskHealthSerializer(ModelSerializer):
    host = serializers.CharField(source="host.name", read_only=True)

    class Meta:
        model = DiskHealth
        fields = [
            "id",
            "host",
            "device",
            "name",
            "dtype",
            "protocol",
            "model",
            "serial",
            "firmware",
            "capacity",
            "rotation",
            "hours",
            "temperature",
            "temp_warn",
            "temp_crit",
            "state",
            "reasons",
            "passed",
            "attributes",
            "nvme",
            "error_count",
            "self_tests",
            "self_test_kinds",
            "testing",
            "exit_status",
            "flags",
            "messages",
            "rising",
            "read_at",
            "answered_at",
        ]
        read_only_fields = fields


class SelfTestRequest(serializers.Serializer):
    kind = serializers.ChoiceField(choices=SelfTestKind.choices)


class SelfTestRunSerializer(ModelSerializer):
    host = serializers.CharField(source="host.name", read_only=True)
    status = RunStatusField(help_text="Running until every disk has a verdict (results), or cancelled.")
    percent = ApiIntegerField(read_only=True)

    class Meta:
        model = SelfTestRun
        fields = ["id", "host", "schedule", "kind", "status", "groups", "current", "results", "percent", "started_at"]
        read_only_fields = fields


class SelfTestRunRequest(serializers.Serializer):
    host = HostField()
    kind = serializers.ChoiceField(choices=SelfTestKind.choices)


class SelfTestScheduleSerializer(ModelSerializer):
    host = serializers.CharField(source="host.name", read_only=True)

    class Meta:
        model = SelfTestSchedule
        fields = ["id", "host", "kind", "every", "weekday", "day", "hour", "enabled", "last_started_at"]
        read_only_fields = fields


class SelfTestScheduleRequest(serializers.Serializer):
    host = HostField()
    kind = serializers.ChoiceField(choices=SelfTestKind.choices)
    every = serializers.ChoiceField(choices=Every.choices)
    weekday = ApiIntegerField(min_value=0, max_value=6, default=6, help_text=WEEKDAY_HELP)
    day = ApiIntegerField(min_value=1, max_value=28, default=1)
    hour = ApiIntegerField(min_value=0, max_value=23, default=2)
