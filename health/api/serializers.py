"""Disk health API shapes."""

from rest_framework import serializers
from rest_framework.serializers import ModelSerializer

from health.choices import SelfTestKind
from health.models import DiskHealth


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
