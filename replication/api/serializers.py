"""Replication API serializers: shape only; the services check every value against both hosts."""

from rest_framework import serializers

from appliance.api.serializers import HostField, ModelSerializer, RunStatusField
from appliance.fields import ApiIntegerField
from replication.models import DatasetState, Pair, Task, TaskRun


class PairSerializer(ModelSerializer):
    source = serializers.SlugRelatedField(slug_field="name", read_only=True)
    target = serializers.SlugRelatedField(slug_field="name", read_only=True)

    class Meta:
        model = Pair
        fields = ["id", "source", "target", "direction", "address", "port", "sender_address", "root", "send_root"]
        fields += ["quota", "receiver_ready", "intrusion", "public_key", "status", "message", "created_at"]
        read_only_fields = fields


class PairCreateRequest(ModelSerializer):
    source = HostField(help_text="The host that sends.")
    target = HostField(help_text="The host that receives.")
    quota = serializers.CharField(
        max_length=40, help_text="The most the pair may store on the target (its root's quota): 2T, 500G or bytes."
    )

    class Meta:
        model = Pair
        fields = ["source", "target", "direction", "address", "port", "root", "send_root", "quota"]
        validators = []  # one pair per source, target and root: the service says so, naming the field
        extra_kwargs = {"root": {"trim_whitespace": False}, "send_root": {"trim_whitespace": False}}


class QuotaRequest(serializers.Serializer):
    quota = serializers.CharField(max_length=40, help_text="2T, 500G or bytes: the pair's root's new quota.")


class DatasetStateSerializer(ModelSerializer):
    class Meta:
        model = DatasetState
        fields = ["source", "target", "snapshot", "guid", "replicated_at", "says"]
        read_only_fields = fields


class TaskSerializer(ModelSerializer):
    target_dataset = serializers.CharField(read_only=True)
    datasets = DatasetStateSerializer(many=True, read_only=True)

    class Meta:
        model = Task
        fields = ["id", "pair", "source_dataset", "recursive", "excludes", "target_name", "target_dataset"]
        fields += ["pattern", "limit", "keep", "keep_hours", "prune_limit", "prune_held", "every_minutes", "cron"]
        fields += ["after_snapshots", "transport", "enabled", "last_run_at"]
        fields += ["datasets", "created_at"]
        read_only_fields = fields


class TaskCreateRequest(ModelSerializer):
    """Names are taken as typed: a name with a space or a line break is refused by the service, never trimmed."""

    excludes = serializers.ListField(
        child=serializers.CharField(max_length=255, trim_whitespace=False), required=False, max_length=100
    )

    class Meta:
        model = Task
        fields = ["pair", "source_dataset", "target_name", "recursive", "excludes", "pattern", "limit", "keep"]
        fields += ["keep_hours", "prune_limit", "every_minutes", "cron", "after_snapshots", "transport"]
        validators = []  # one task per target: the service says so, naming the field
        extra_kwargs = {name: {"trim_whitespace": False} for name in ("source_dataset", "target_name", "pattern")}
        extra_kwargs["prune_limit"] = {"required": False, "help_text": "Empty: half of keep."}


class RetentionRequest(serializers.Serializer):
    keep = ApiIntegerField(help_text="Snapshots the target keeps per dataset; 0 keeps all.")
    keep_hours = ApiIntegerField(help_text="No snapshot younger than this many hours is pruned.")
    prune_limit = ApiIntegerField(help_text="At most this many pruned per dataset and run.")


class TaskRunSerializer(ModelSerializer):
    status = RunStatusField(help_text="Its operation's status: a run is as far as its operation got.")
    message = serializers.CharField(source="status_message", read_only=True)
    finished_at = serializers.DateTimeField(source="ended_at", read_only=True)

    class Meta:
        model = TaskRun
        fields = ["id", "operation", "status", "outcome", "expected", "sent", "snapshots", "message", "started_at"]
        fields += ["finished_at"]
        read_only_fields = fields


class RestoreRequest(serializers.Serializer):
    snapshot = serializers.CharField(max_length=511, help_text="dataset@name of the replica on the target.")
    how = serializers.ChoiceField(choices=["clone", "back"], default="clone")
    name = serializers.CharField(max_length=255)
