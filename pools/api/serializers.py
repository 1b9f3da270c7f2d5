"""API serializers for the storage inventory."""

from rest_framework import serializers

from appliance.host.shares import FOLDER_MODES
from appliance.host.zpool import PoolLayout, VdevSpec
from appliance.models import Host
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
        fields = ["id", "dataset", "name", "used", "referenced", "created_at", "holds"]


# --- requests (shape only: the services check names, layouts and disks against the host) ---------------
class HostField(serializers.SlugRelatedField):
    def __init__(self, **kwargs):
        super().__init__(slug_field="name", queryset=Host.objects.all(), **kwargs)


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


class ConfirmRequest(serializers.Serializer):
    confirm = serializers.CharField(help_text="The object's name, typed again.")


class ActionRequest(serializers.Serializer):
    action = serializers.CharField(max_length=16)


class DeviceRequest(ActionRequest):
    device = serializers.CharField(max_length=255, required=False, default="")
    new_device = serializers.CharField(max_length=255, required=False, default="")


class HostRequest(serializers.Serializer):
    host = HostField()


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
    destroy_newer = serializers.BooleanField(default=False)


class CloneRequest(serializers.Serializer):
    target = serializers.CharField(max_length=255)


class HoldRequest(serializers.Serializer):
    tag = serializers.CharField(max_length=64, default="tarn")


class SnapshotDestroyRequest(HostRequest):
    snapshots = serializers.ListField(child=serializers.CharField(max_length=512), min_length=1, max_length=10_000)


# --- shares -----------------------------------------------------------------------------------------------
SMB_FIELDS = [
    "name", "dataset", "comment", "preset", "read_only", "browseable", "guest_ok", "valid_users", "hosts_allow",
    "hosts_deny", "previous_versions", "snapshot_prefix", "time_machine_quota",
]  # fmt: skip
NFS_FIELDS = ["dataset", "clients", "read_only", "squash", "anonuid", "anongid", "sec", "async_writes", "comment"]


class SmbShareSerializer(serializers.ModelSerializer):
    host = serializers.SlugRelatedField(slug_field="name", read_only=True)

    class Meta:
        from pools.models import SmbShare

        model = SmbShare
        fields = ["id", "host", *SMB_FIELDS, "path", "created_at"]
        read_only_fields = ["path", "created_at"]
        validators = []  # the name rule (unique per host, ignoring case) is checked by the service


class SmbShareCreateRequest(SmbShareSerializer):
    host = HostField()


class NfsExportSerializer(serializers.ModelSerializer):
    host = serializers.SlugRelatedField(slug_field="name", read_only=True)
    wildcard_ok = serializers.BooleanField(write_only=True, required=False, default=False)
    async_ok = serializers.BooleanField(write_only=True, required=False, default=False)

    class Meta:
        from pools.models import NfsExport

        model = NfsExport
        fields = ["id", "host", *NFS_FIELDS, "wildcard_ok", "async_ok", "path", "created_at"]
        read_only_fields = ["path", "created_at"]
        validators = []

    def validate(self, data):
        clients = data.get("clients", getattr(self.instance, "clients", "")) or ""
        if "*" in clients.split() and not data.pop("wildcard_ok", False):
            raise serializers.ValidationError({"wildcard_ok": "Exporting to * needs wildcard_ok: true."})
        if data.get("async_writes") and not data.pop("async_ok", False):
            raise serializers.ValidationError({"async_ok": "async writes need async_ok: true."})
        data.pop("wildcard_ok", None)
        data.pop("async_ok", None)
        return data


class NfsExportCreateRequest(NfsExportSerializer):
    host = HostField()


class ShareSettingsSerializer(serializers.ModelSerializer):
    host = serializers.SlugRelatedField(slug_field="name", read_only=True)

    class Meta:
        from pools.models import ShareSettings

        model = ShareSettings
        fields = [
            "host", "smb_min_protocol", "smb_multichannel", "smb_encryption", "smb_signing", "workgroup",
            "server_string", "nfs_v3", "nfs_v4", "nfs_threads",
        ]  # fmt: skip


class SambaUserSerializer(serializers.ModelSerializer):
    host = serializers.SlugRelatedField(slug_field="name", read_only=True)

    class Meta:
        from pools.models import SambaUser

        model = SambaUser
        fields = ["id", "host", "username", "enabled", "created_at"]


class SambaUserCreateRequest(HostRequest):
    username = serializers.CharField(max_length=32)
    password = serializers.CharField(max_length=128, write_only=True, style={"input_type": "password"})


class PasswordRequest(serializers.Serializer):
    password = serializers.CharField(max_length=128, write_only=True, style={"input_type": "password"})


class ShareFolderRequest(serializers.Serializer):
    owner = serializers.CharField(max_length=32, help_text="root or a Samba user.")
    group = serializers.CharField(max_length=32, help_text="users, root or a Samba user's own group.")
    mode = serializers.ChoiceField(choices=list(FOLDER_MODES), help_text="2775, 2770, 0755, 0750 or 0700.")
