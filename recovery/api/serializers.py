"""Recovery API shapes: where (host, dataset, snapshot, path as text or as hex names) and what was read."""

from rest_framework import serializers

from appliance.api.serializers import ConfirmField, HostField
from appliance.fields import ApiFloatField, ApiIntegerField
from recovery.choices import VERSIONS_MOST, VERSIONS_PASS, How
from recovery.models import Restore


class WhereQuery(serializers.Serializer):
    host = HostField()
    dataset = serializers.CharField(max_length=255)
    path = serializers.CharField(max_length=4096, required=False, allow_blank=True, trim_whitespace=False,
                                 help_text="Names joined by '/', e.g. team/2026 (UTF-8 names).")  # fmt: skip
    raw_path = serializers.CharField(max_length=4096 * 3, required=False, allow_blank=True,
                                     help_text="The hex of each name's bytes joined by '/' (any name); wins over path.")  # fmt: skip


class FolderQuery(WhereQuery):
    snapshot = serializers.CharField(max_length=255, required=False, allow_blank=True,
                                     help_text="Empty: the live folder.")  # fmt: skip
    page = ApiIntegerField(min_value=1, max_value=10**6, default=1)


class VersionsQuery(WhereQuery):
    offset = ApiIntegerField(min_value=0, max_value=10**7, default=0, help_text="Snapshots (newest first) skipped.")
    limit = ApiIntegerField(min_value=1, max_value=VERSIONS_MOST, default=VERSIONS_PASS,
                            help_text="Snapshots this pass looks into.")  # fmt: skip


class SnapshotEntrySerializer(serializers.Serializer):
    name = serializers.CharField(help_text="As text: anything not printable UTF-8 escaped.")
    raw = serializers.CharField(help_text="The name's bytes as hex.")
    type = serializers.CharField()
    size = ApiIntegerField()
    mode = ApiIntegerField()
    owner = serializers.CharField()
    group = serializers.CharField()
    mtime = ApiFloatField()
    target = serializers.CharField(help_text="A link's target (never followed).")
    live = serializers.CharField(allow_null=True, help_text="same, changed or gone in the live folder; null: live.")


class SnapshotFolderSerializer(serializers.Serializer):
    entries = SnapshotEntrySerializer(many=True)
    total = ApiIntegerField()
    offset = ApiIntegerField()


class FileVersionSerializer(serializers.Serializer):
    newest = serializers.CharField()
    oldest = serializers.CharField()
    count = ApiIntegerField()
    size = ApiIntegerField(allow_null=True)
    mtime = ApiFloatField(allow_null=True)
    present = serializers.BooleanField(source="stamp", help_text="false: the path was not there in these snapshots")


class FileVersionsSerializer(serializers.Serializer):
    versions = FileVersionSerializer(many=True)
    looked = ApiIntegerField()
    offset = ApiIntegerField()
    total = ApiIntegerField()
    next_offset = ApiIntegerField(allow_null=True)
    most_mounted = ApiIntegerField()
    missing = serializers.ListField(child=serializers.CharField())
    live_size = ApiIntegerField(allow_null=True, help_text="The live file's size; null: not there now.")


class FileRestoreRequest(serializers.Serializer):
    host = HostField()
    dataset = serializers.CharField(max_length=255)
    snapshot = serializers.CharField(max_length=255)
    path = serializers.CharField(max_length=4096, required=False, allow_blank=True, trim_whitespace=False,
                                 help_text="Names joined by '/' (UTF-8 names).")  # fmt: skip
    raw_path = serializers.CharField(max_length=4096 * 3, required=False, allow_blank=True,
                                     help_text="The hex of each name's bytes joined by '/'; wins over path.")  # fmt: skip
    how = serializers.ChoiceField(choices=How.choices)
    confirm = ConfirmField(required=False, allow_blank=True, help_text="In place: the file's or folder's name, typed.")


class FileRestoreSerializer(serializers.ModelSerializer):
    host = serializers.SlugRelatedField(slug_field="name", read_only=True)

    class Meta:
        model = Restore
        fields = ["id", "host", "dataset", "snapshot", "shown", "how", "name", "status", "progress", "safety",
                  "operation", "created_at", "finished_at"]  # fmt: skip
        read_only_fields = fields


class ChangesQuery(WhereQuery):
    since = serializers.CharField(max_length=255, help_text="The earlier snapshot's name.")
    to = serializers.CharField(max_length=255, required=False, allow_blank=True, help_text="A later one; empty: now.")
    page = ApiIntegerField(min_value=1, max_value=10**6, default=1)


class ChangeSerializer(serializers.Serializer):
    change = serializers.CharField(help_text="added, removed, modified or renamed")
    type = serializers.CharField()
    path = serializers.CharField(help_text="Below the mount point, as text (escaped).")
    new_path = serializers.CharField(help_text="A rename's new path.")
    links = ApiIntegerField(allow_null=True, help_text="A file's link count went up or down by this.")
    at = ApiFloatField()


class ChangesSerializer(serializers.Serializer):
    changes = ChangeSerializer(many=True)
    counts = serializers.DictField(child=ApiIntegerField())
    matched = ApiIntegerField()
    total = ApiIntegerField()
