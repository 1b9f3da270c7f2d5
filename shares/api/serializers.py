"""Share API serializers: shape only; the services check every value against the host's rules."""

from rest_framework import serializers

from appliance.api.serializers import HostField, HostRequest, ModelSerializer
from appliance.validators import no_bidi
from hostlib.posix import FOLDER_MODES
from shares.choices import NFS_CONFIRMATION_FIELDS
from shares.models import NfsExport, SambaUser, ShareSettings, ShareStatus, SmbShare

SMB_FIELDS = [
    "name",
    "dataset",
    "comment",
    "preset",
    "read_only",
    "browseable",
    "guest_ok",
    "valid_users",
    "hosts_allow",
    "hosts_deny",
    "previous_versions",
    "snapshot_prefix",
    "time_machine_quota",
]
NFS_FIELDS = ["dataset", "clients", "read_only", "squash", "anonuid", "anongid", "sec", "async_writes", "comment"]


def offered_field():
    return serializers.BooleanField(
        read_only=True,
        help_text="Whether clients reach the dataset now: false while it is locked or not mounted (as last read).",
    )


def off_reason_field():
    return serializers.CharField(
        read_only=True,
        help_text="Why it is off: dataset locked, dataset not mounted or dataset not found; empty when offered.",
    )


class SmbShareSerializer(ModelSerializer):
    host = serializers.SlugRelatedField(slug_field="name", read_only=True)
    offered = offered_field()
    off_reason = off_reason_field()

    class Meta:
        model = SmbShare
        fields = ["id", "host", *SMB_FIELDS, "path", "offered", "off_reason", "created_at"]
        read_only_fields = ["path", "created_at"]
        validators = []  # the name rule (unique per host, ignoring case) is checked by the service


class SmbShareCreateRequest(SmbShareSerializer):
    host = HostField()


class NfsExportSerializer(ModelSerializer):
    host = serializers.SlugRelatedField(slug_field="name", read_only=True)
    wildcard_ok = serializers.BooleanField(
        write_only=True, required=False, default=False, help_text="Yes to a client that matches every host."
    )
    root_ok = serializers.BooleanField(
        write_only=True, required=False, default=False, help_text="Yes to client root acting as root (admin only)."
    )
    async_ok = serializers.BooleanField(write_only=True, required=False, default=False)
    offered = offered_field()
    off_reason = off_reason_field()

    class Meta:
        model = NfsExport
        fields = [
            "id",
            "host",
            *NFS_FIELDS,
            "wildcard_ok",
            "root_ok",
            "async_ok",
            "path",
            "offered",
            "off_reason",
            "created_at",
        ]
        read_only_fields = ["path", "created_at"]
        validators = []
        extra_kwargs = {"comment": {"validators": [no_bidi]}}  # stored and shown only: no config file checks it

    def confirmed(self) -> list[str]:
        """The risks the request said yes to; the service decides which the export needs."""
        return [risk for risk, box in NFS_CONFIRMATION_FIELDS.items() if self.validated_data.pop(box, False)]


class NfsExportCreateRequest(NfsExportSerializer):
    host = HostField()


class ShareSettingsSerializer(ModelSerializer):
    host = serializers.SlugRelatedField(slug_field="name", read_only=True)

    class Meta:
        model = ShareSettings
        fields = [
            "host",
            "smb_min_protocol",
            "smb_multichannel",
            "smb_encryption",
            "smb_signing",
            "workgroup",
            "domain_workgroup",
            "server_string",
            "nfs_v3",
            "nfs_v4",
            "nfs_threads",
        ]
        read_only_fields = ["domain_workgroup"]


class SambaUserSerializer(ModelSerializer):
    host = serializers.SlugRelatedField(slug_field="name", read_only=True)

    class Meta:
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


class ShareStatusSerializer(ModelSerializer):
    host = serializers.CharField(source="host.name", read_only=True)

    class Meta:
        model = ShareStatus
        fields = ["host", "smb_sessions", "nfs_clients", "observed_at"]
