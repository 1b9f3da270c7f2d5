"""API serializers for the storage inventory."""

from rest_framework import serializers

from pools.models import Dataset, Disk, Pool, Snapshot, Vdev


class VdevSerializer(serializers.ModelSerializer):
    class Meta:
        model = Vdev
        fields = [
            "id",
            "parent",
            "depth",
            "name",
            "type",
            "role",
            "state",
            "path",
            "size",
            "allocated",
            "read_errors",
            "write_errors",
            "checksum_errors",
        ]


class PoolSerializer(serializers.ModelSerializer):
    host = serializers.SlugRelatedField(slug_field="name", read_only=True)

    class Meta:
        model = Pool
        fields = [
            "id",
            "host",
            "name",
            "state",
            "size",
            "allocated",
            "free",
            "capacity",
            "fragmentation",
            "error_count",
            "scan_function",
            "scan_state",
            "scan_percent",
            "scan_errors",
            "scan_end",
            "observed_at",
        ]


class PoolDetailSerializer(PoolSerializer):
    vdevs = VdevSerializer(many=True, read_only=True)

    class Meta(PoolSerializer.Meta):
        fields = [*PoolSerializer.Meta.fields, "vdevs"]


class DiskSerializer(serializers.ModelSerializer):
    host = serializers.SlugRelatedField(slug_field="name", read_only=True)
    pool = serializers.SlugRelatedField(slug_field="name", read_only=True)

    class Meta:
        model = Disk
        fields = [
            "id",
            "host",
            "name",
            "path",
            "by_id",
            "size",
            "model",
            "serial",
            "media",
            "fstype",
            "mounted",
            "pool",
            "vdev_role",
            "is_free",
            "observed_at",
        ]


class DatasetSerializer(serializers.ModelSerializer):
    host = serializers.SlugRelatedField(slug_field="name", read_only=True)

    class Meta:
        model = Dataset
        fields = [
            "id",
            "host",
            "name",
            "type",
            "used",
            "available",
            "referenced",
            "compressratio",
            "mountpoint",
            "properties",
            "snapshot_count",
            "observed_at",
        ]


class SnapshotSerializer(serializers.ModelSerializer):
    dataset = serializers.SlugRelatedField(slug_field="name", read_only=True)

    class Meta:
        model = Snapshot
        fields = ["id", "dataset", "name", "used", "referenced", "created_at"]
