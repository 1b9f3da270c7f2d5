"""Benchmark API shapes."""

from rest_framework import serializers

from appliance.api.serializers import HostRequest
from appliance.host.fio import SIZE
from benchmarks.models import Run
from benchmarks.profiles import BUILT_IN


class RunSerializer(serializers.ModelSerializer):
    host = serializers.SlugRelatedField(slug_field="name", read_only=True)

    class Meta:
        model = Run
        fields = ["id", "host", "profile", "title", "target", "jobs", "status", "progress", "current", "manifest",
                  "results", "series", "message", "operation", "created_at", "finished_at"]  # fmt: skip
        read_only_fields = fields


class RunRequest(HostRequest):
    profile = serializers.ChoiceField(choices=[p.key for p in BUILT_IN if p.jobs])
    dataset = serializers.CharField(max_length=255)
    size = serializers.RegexField(SIZE, required=False, default="", allow_blank=True, max_length=8)
    runtime = serializers.IntegerField(required=False, default=0, min_value=0, max_value=86400)
