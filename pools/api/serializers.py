"""API serializers for the storage inventory."""

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from appliance.api.serializers import ConfirmField, HostField, HostRequest, ModelSerializer, secret_field
from appliance.fields import ApiIntegerField, ApiPassphraseRoundsField
from hostlib.zpool import PoolLayout, VdevSpec
from pools import selectors
from pools.models import Dataset, Disk, Pool, ScrubSchedule, Snapshot, SnapshotTask, Vdev


class VdevSerializer(ModelSerializer):
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


class PoolSerializer(ModelSerializer):
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


class ScrubScheduleSerializer(ModelSerializer):
    class Meta:
        model = ScrubSchedule
        fields = ["pool", "every_days", "last_run_at"]
        read_only_fields = fields


class PoolDetailSerializer(PoolSerializer):
    vdevs = VdevSerializer(many=True, read_only=True)
    scrub_schedule = serializers.SerializerMethodField(help_text="null: no scrub schedule.")

    class Meta(PoolSerializer.Meta):
        fields = [*PoolSerializer.Meta.fields, "vdevs", "scrub_schedule"]

    @extend_schema_field(ScrubScheduleSerializer(allow_null=True))
    def get_scrub_schedule(self, pool):
        schedule = selectors.scrub_schedule(pool=pool)
        return ScrubScheduleSerializer(schedule).data if schedule else None


class DiskSerializer(ModelSerializer):
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


class EncryptionSerializer(serializers.Serializer):
    cipher = serializers.CharField(help_text="aes-256-gcm …")
    root = serializers.CharField(help_text="The encryption root: the dataset whose key unlocks this one.")
    key = serializers.CharField(help_text="available, or unavailable (locked).")
    format = serializers.CharField(help_text="passphrase, hex or raw.")
    location = serializers.CharField(help_text="prompt, or file:///… on the NAS.")


class DatasetSerializer(ModelSerializer):
    host = serializers.SlugRelatedField(slug_field="name", read_only=True)
    encryption = serializers.SerializerMethodField(help_text="null when the dataset is not encrypted.")

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
            "encryption",
        ]

    @extend_schema_field(EncryptionSerializer(allow_null=True))
    def get_encryption(self, dataset) -> dict | None:
        return dataset.encryption or None


class MediaSpeedSerializer(serializers.Serializer):
    """One disk's figures by media type, which the pool-creation preview multiplies."""

    media = serializers.CharField(read_only=True)
    mb_s = ApiIntegerField(help_text="One disk's streaming speed, MB/s.")
    iops = ApiIntegerField(help_text="One disk's small random reads per second.")


class SnapshotTaskSerializer(ModelSerializer):
    """A snapshot schedule: shape only (the service checks the dataset, the retention and the interval)."""

    host = HostField()

    class Meta:
        model = SnapshotTask
        fields = [
            "id",
            "host",
            "dataset",
            "recursive",
            "every_minutes",
            "prefix",
            "keep_count",
            "keep_days",
            "exclude",
            "enabled",
            "last_run_at",
            "created_at",
        ]
        read_only_fields = ["id", "enabled", "last_run_at", "created_at"]
        validators = []  # one schedule per dataset and prefix: the service says so, naming the prefix


class SnapshotSerializer(ModelSerializer):
    dataset = serializers.SlugRelatedField(slug_field="name", read_only=True)

    class Meta:
        model = Snapshot
        fields = ["id", "dataset", "name", "used", "referenced", "created_at", "createtxg", "holds"]


# --- requests (shape only: the services check names, layouts and disks against the host) ---------------
class VdevRequest(serializers.Serializer):
    kind = serializers.ChoiceField(
        choices=["stripe", "mirror", "raidz1", "raidz2", "raidz3", "draid1", "draid2", "draid3"]
    )
    disks = serializers.ListField(child=serializers.CharField(max_length=255), min_length=1, max_length=255)


class LayoutRequest(serializers.Serializer):
    data = VdevRequest(many=True, required=False, default=list)
    log = VdevRequest(many=True, required=False, default=list)
    special = VdevRequest(many=True, required=False, default=list)
    cache = serializers.ListField(child=serializers.CharField(max_length=255), required=False, default=list)
    spare = serializers.ListField(child=serializers.CharField(max_length=255), required=False, default=list)

    def layout(self) -> PoolLayout:
        d = self.validated_data

        def vdevs(key):
            return tuple(VdevSpec(v["kind"], tuple(v["disks"])) for v in d[key])

        return PoolLayout(vdevs("data"), vdevs("log"), vdevs("special"), tuple(d["cache"]), tuple(d["spare"]))


class PoolCreateRequest(LayoutRequest):
    host = HostField()
    name = serializers.CharField(max_length=255)
    pool_properties = serializers.DictField(child=serializers.CharField(), required=False, default=dict)
    root_properties = serializers.DictField(child=serializers.CharField(), required=False, default=dict)
    encryption = serializers.ChoiceField(
        choices=["", "passphrase", "hex", "raw"], required=False, default="", help_text="Encrypt the root dataset."
    )
    passphrase = secret_field()
    passphrase_confirm = secret_field()
    pbkdf2iters = ApiPassphraseRoundsField()


class ActionRequest(serializers.Serializer):
    action = serializers.CharField(max_length=16)


class DeviceRequest(ActionRequest):
    """Names as typed (never trimmed): replace, attach and offline need `confirm`, the device's name (its last path
    component, or its path) or, for an offline that leaves no redundancy, the pool's name."""

    device = serializers.CharField(max_length=255, required=False, default="", trim_whitespace=False)
    new_device = serializers.CharField(max_length=255, required=False, default="", trim_whitespace=False)
    confirm = ConfirmField(required=False, default="", help_text="The device's or the pool's name, as the plan says.")


class ImportRequest(HostRequest):
    guid = serializers.CharField(max_length=24)
    new_name = serializers.CharField(max_length=255, required=False, default="")


class DatasetCreateRequest(HostRequest):
    name = serializers.CharField(max_length=255)
    properties = serializers.DictField(child=serializers.CharField(), required=False, default=dict)
    volsize = serializers.CharField(required=False, default=None, help_text="Set for a zvol: 10G, 500M…")


class PropertiesRequest(serializers.Serializer):
    properties = serializers.DictField(child=serializers.CharField(), allow_empty=False)


class InheritRequest(serializers.Serializer):
    property = serializers.CharField(max_length=64)


class RenameRequest(serializers.Serializer):
    new_name = serializers.CharField(max_length=255)


class SnapshotCreateRequest(HostRequest):
    dataset = serializers.CharField(max_length=255)
    name = serializers.CharField(max_length=255)
    recursive = serializers.BooleanField(default=False)


class RollbackRequest(serializers.Serializer):
    destroy_newer = serializers.BooleanField(default=False, help_text="Yes to destroying the newer snapshots.")
    confirm = ConfirmField(required=False, default="", help_text="The snapshot's name, when it has newer.")


class CloneRequest(serializers.Serializer):
    target = serializers.CharField(max_length=255)


class HoldRequest(serializers.Serializer):
    tag = serializers.CharField(max_length=64, default="tarn")


class SnapshotDestroyRequest(HostRequest):
    snapshots = serializers.ListField(child=serializers.CharField(max_length=512), min_length=1, max_length=10_000)


class ScrubScheduleRequest(serializers.Serializer):
    every_days = ApiIntegerField(min_value=1, help_text="Scrub every so many days (1 to 365; 30 is usual).")
