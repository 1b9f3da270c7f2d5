"""Replication API serializers: shape only; the services check every value against both hosts."""

from rest_framework import serializers

from appliance.api.serializers import HostField, ModelSerializer
from replication.models import DatasetState, Pair, Task, TaskRun


class PairSerializer(ModelSerializer):
    source = serializers.SlugRelatedField(slug_field="name", read_only=True)
    target = serializers.SlugRelatedField(slug_field="name", read_only=True)

    class Meta:
        model = Pair
        fields = ["id", "source", "target", "direction", "address", "port", "sender_address", "root", "send_root"]
        fields += ["public_key", "status", "message", "created_at"]
        read_only_fields = fields


class PairCreateRequest(ModelSerializer):
    source = HostField(help_text="The host that sends.")
    target = HostField(help_text="The host that receives.")

    class Meta:
        model = Pair
        fields = ["source", "target", "direction", "address", "port", "root", "send_root"]
        validators = []  # one pair per source, target and root: the service says so, naming the field


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
        fields += ["pattern", "limit", "keep", "every_minutes", "cron", "after_snapshots", "transport", "enabled"]
        fields += ["last_run_at"]
        fields += ["datasets", "created_at"]
        read_only_fields = fields


class TaskCreateRequest(ModelSerializer):
    excludes = serializers.ListField(child=serializers.CharField(max_length=255), required=False, max_length=100)

    class Meta:
        model = Task
        fields = ["pair", "source_dataset", "target_name", "recursive", "excludes", "pattern", "limit", "keep"]
        fields += ["every_minutes", "cron", "after_snapshots", "transport"]
        validators = []  # one task per target: the service says so, naming the field


class TaskRunSerializer(ModelSerializer):
    class Meta:
        model = TaskRun
        fields = ["id", "operation", "status", "expected", "sent", "snapshots", "message", "started_at"]
        fields += ["finished_at"]
        read_only_fields = fields


class RestoreRequest(serializers.Serializer):
    snapshot = serializers.CharField(max_length=511, help_text="dataset@name of the replica on the target.")
    how = serializers.ChoiceField(choices=["clone", "back"], default="clone")
    name = serializers.CharField(max_length=255)
