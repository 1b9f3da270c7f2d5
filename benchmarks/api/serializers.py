"""Benchmark API shapes."""

from rest_framework import serializers

from appliance.api.serializers import HostField, HostRequest, ModelSerializer, RunStatusField
from appliance.fields import ApiIntegerField, ApiIPAddressField
from appliance.validators import no_bidi
from benchmarks.choices import (
    NETWORK_PROFILES,
    PROPERTIES,
    SCHEDULE_MINUTE_HELP,
    SCHEDULES_ENABLED_MAX,
    STORAGE_PROFILES,
)
from benchmarks.models import Run, Schedule, Suite
from hostlib.fio import SIZE

PROFILE_HELP = f"A storage profile: one of {', '.join(STORAGE_PROFILES)}, or an admin's copy custom-<id>."


class RunSerializer(ModelSerializer):
    host = serializers.SlugRelatedField(slug_field="name", read_only=True)
    peer = serializers.SlugRelatedField(slug_field="name", read_only=True)
    status = RunStatusField()
    message = serializers.CharField(source="status_message", read_only=True)
    finished_at = serializers.DateTimeField(source="ended_at", read_only=True)

    class Meta:
        model = Run
        fields = [
            "id",
            "host",
            "kind",
            "profile",
            "title",
            "target",
            "share",
            "peer",
            "properties",
            "jobs",
            "status",
            "progress",
            "current",
            "manifest",
            "results",
            "series",
            "message",
            "flag",
            "suite",
            "schedule",
            "operation",
            "created_at",
            "finished_at",
        ]
        read_only_fields = fields


class Properties(serializers.DictField):
    """Scratch dataset properties: only those a run may set, with their allowed values."""

    child = serializers.CharField(max_length=16)

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        for name, v in value.items():
            if name not in PROPERTIES or v not in PROPERTIES[name]:
                raise serializers.ValidationError(f"{name}: not a property a run may set, or not one of its values.")
        return value


class Sized(HostRequest):
    dataset = serializers.CharField(max_length=255)
    size = serializers.RegexField(SIZE, required=False, default="", allow_blank=True, max_length=8)
    runtime = ApiIntegerField(required=False, default=0, min_value=0, max_value=86400)
    cache_ok = serializers.BooleanField(
        required=False, default=False, help_text="Measure the cache: run although the working set fits in the ARC."
    )


class RunRequest(Sized):
    profile = serializers.CharField(max_length=40, help_text=PROFILE_HELP)
    properties = Properties(required=False, default=dict)


class ShareRunRequest(HostRequest):
    profile = serializers.CharField(max_length=40, help_text=PROFILE_HELP)
    protocol = serializers.ChoiceField(choices=["smb", "nfs"])
    share = serializers.CharField(max_length=1024, help_text="The SMB share's name or the NFS export's path.")
    size = serializers.RegexField(SIZE, required=False, default="", allow_blank=True, max_length=8)
    runtime = ApiIntegerField(required=False, default=0, min_value=0, max_value=86400)
    cache_ok = serializers.BooleanField(required=False, default=False)


class NetworkRunRequest(HostRequest):
    profile = serializers.ChoiceField(choices=NETWORK_PROFILES)
    peer = HostField(help_text="The host iperf3's client runs on.")
    address = ApiIPAddressField(help_text="One of the host's addresses.")
    runtime = ApiIntegerField(required=False, default=0, min_value=0, max_value=300)


class SuiteSerializer(ModelSerializer):
    host = serializers.SlugRelatedField(slug_field="name", read_only=True)
    runs = serializers.PrimaryKeyRelatedField(many=True, read_only=True)

    class Meta:
        model = Suite
        fields = [
            "id",
            "host",
            "title",
            "target",
            "profiles",
            "prop",
            "values",
            "schedule",
            "operation",
            "runs",
            "created_at",
        ]
        read_only_fields = fields


class SuiteRequest(Sized):
    profiles = serializers.ListField(
        child=serializers.CharField(max_length=40), min_length=1, max_length=24, help_text=PROFILE_HELP
    )
    prop = serializers.ChoiceField(choices=list(PROPERTIES), required=False, default="", allow_blank=True)
    values = serializers.ListField(child=serializers.CharField(max_length=16), required=False, default=list)

    def validate(self, data):
        if data["prop"] and any(v not in PROPERTIES[data["prop"]] for v in data["values"]):
            raise serializers.ValidationError(
                {"values": f"Values of {data['prop']}: {', '.join(PROPERTIES[data['prop']])}."}
            )
        return data


class ScheduleSerializer(ModelSerializer):
    host = HostField()
    name = serializers.CharField(max_length=80, validators=[no_bidi])
    profiles = serializers.ListField(
        child=serializers.CharField(max_length=40), min_length=1, max_length=24, help_text=PROFILE_HELP
    )
    size = serializers.RegexField(SIZE, required=False, default="", allow_blank=True, max_length=8)
    drop_percent = ApiIntegerField(min_value=1, max_value=90, default=10)

    class Meta:
        model = Schedule
        fields = [
            "id",
            "host",
            "name",
            "profiles",
            "target",
            "size",
            "runtime",
            "cache_ok",
            "minute",
            "hour",
            "day_of_week",
            "drop_percent",
            "enabled",
            "last_fired_at",
            "last_message",
            "created_at",
        ]
        read_only_fields = ["id", "last_fired_at", "last_message", "created_at"]
        extra_kwargs = {
            "minute": {"help_text": SCHEDULE_MINUTE_HELP},
            "enabled": {"help_text": f"At most {SCHEDULES_ENABLED_MAX} enabled schedules per host."},
        }


class ProfileSerializer(serializers.Serializer):
    """A built-in profile or an admin's copy (custom: its id, for deleting)."""

    key = serializers.CharField()
    title = serializers.CharField()
    represents = serializers.CharField()
    jobs = serializers.ListField(child=serializers.DictField())
    properties = serializers.DictField(child=serializers.CharField())
    caveat = serializers.CharField()
    iperf_streams = ApiIntegerField()
    custom = ApiIntegerField(allow_null=True)


class ProfileCopyRequest(serializers.Serializer):
    based_on = serializers.CharField(max_length=40, help_text=PROFILE_HELP)
    title = serializers.CharField(max_length=80, validators=[no_bidi])
    represents = serializers.CharField(
        max_length=200, required=False, default="", allow_blank=True, validators=[no_bidi]
    )
    job = serializers.DictField(
        required=False,
        default=dict,
        help_text="Fields to change in the first job: rw, bs, "
        "size, runtime, ramp, numjobs, iodepth, ioengine, rwmixread, sync, direct, end_fsync, nrfiles.",
    )
    properties = Properties(required=False, default=dict)
