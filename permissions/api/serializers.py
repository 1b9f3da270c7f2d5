"""Permissions API shapes: a folder (host, dataset, path), its ACL as read (entries by name, the default ACL,
getfacl's text), a change (the editor's fields; named entries as a list), what a user may do there, and a walk."""

from rest_framework import serializers

from appliance.api.serializers import ConfirmField, HostField
from appliance.choices import AccountKind
from appliance.fields import ApiIntegerField
from permissions.choices import QuotaKind
from permissions.models import AclWalk, QuotaUse

PERMS_HELP = "Three of r, w, x or -: rwx, r-x, ---."


class FolderRequest(serializers.Serializer):
    host = HostField()
    dataset = serializers.CharField(max_length=255)
    path = serializers.CharField(max_length=4096, required=False, default="", allow_blank=True, trim_whitespace=False)


class EntrySerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=AccountKind.choices)
    name = serializers.CharField(max_length=256, trim_whitespace=False, help_text="A user or group, or its id.")
    perms = serializers.CharField(max_length=3, help_text=PERMS_HELP)


class AclEntryOut(serializers.Serializer):
    kind = serializers.CharField()
    id = ApiIntegerField(read_only=True)
    name = serializers.CharField()
    perms = serializers.CharField()


class AclOut(serializers.Serializer):
    path = serializers.CharField()
    owner = serializers.CharField()
    group = serializers.CharField()
    uid = ApiIntegerField(read_only=True)
    gid = ApiIntegerField(read_only=True)
    mode = serializers.CharField(help_text="Octal, with set-gid and sticky.")
    owner_perms = serializers.CharField()
    group_perms = serializers.CharField()
    other_perms = serializers.CharField()
    mask = serializers.CharField(allow_null=True)
    entries = AclEntryOut(many=True)
    default = serializers.DictField(allow_null=True, help_text="The default ACL, in the same shape; null: none.")
    getfacl = serializers.CharField()
    other_dataset = serializers.BooleanField()


class AclRequest(FolderRequest):
    owner = serializers.CharField(max_length=256, required=False, default="", allow_blank=True)
    group = serializers.CharField(max_length=256, required=False, default="", allow_blank=True)
    owner_perms = serializers.CharField(max_length=3, help_text=PERMS_HELP)
    group_perms = serializers.CharField(max_length=3, help_text=PERMS_HELP)
    other_perms = serializers.CharField(max_length=3, help_text=PERMS_HELP)
    setgid = serializers.BooleanField(default=False)
    sticky = serializers.BooleanField(default=False)
    defaults = serializers.BooleanField(default=False, help_text="New files and folders inherit it (default ACL).")
    entries = EntrySerializer(many=True, required=False, default=list)
    recursive = serializers.BooleanField(
        default=False, help_text="Everything inside too: counted first (a walk), applied by its apply action."
    )
    confirm = ConfirmField(required=False, default="", allow_blank=True, help_text="The folder's name, when asked.")


class EffectiveRequest(FolderRequest):
    user = serializers.CharField(max_length=256, trim_whitespace=False)


class AclWalkSerializer(serializers.ModelSerializer):
    host = serializers.SlugRelatedField(slug_field="name", read_only=True)
    created_by = serializers.SlugRelatedField(slug_field="username", read_only=True)

    class Meta:
        model = AclWalk
        fields = [
            "id",
            "host",
            "dataset",
            "path",
            "status",
            "preview",
            "applied",
            "stop_requested",
            "created_by",
            "created_at",
            "previewed_at",
            "finished_at",
            "count_operation",
            "apply_operation",
        ]
        read_only_fields = fields


class QuotaUseSerializer(serializers.ModelSerializer):
    host = serializers.SlugRelatedField(slug_field="name", read_only=True)
    percent = serializers.FloatField(
        source="share", read_only=True, allow_null=True, help_text="% of the quota; null: none"
    )

    class Meta:
        model = QuotaUse
        fields = ["id", "host", "dataset", "kind", "name", "used", "quota", "percent", "objused", "objquota", "read_at"]
        read_only_fields = fields


class QuotaSetRequest(serializers.Serializer):
    host = HostField()
    dataset = serializers.CharField(max_length=255)
    kind = serializers.ChoiceField(choices=QuotaKind.choices)
    name = serializers.CharField(
        max_length=256, trim_whitespace=False, help_text="A user or group (or id), or a project id."
    )
    quota = serializers.CharField(
        max_length=32, required=False, default="", allow_blank=True, help_text="e.g. 50G; empty: none."
    )
    objquota = serializers.CharField(
        max_length=24, required=False, default="", allow_blank=True, help_text="Files; empty: none."
    )


class ProjectRequest(serializers.Serializer):
    host = HostField()
    dataset = serializers.CharField(max_length=255)
    path = serializers.CharField(max_length=4096, trim_whitespace=False)
    project = serializers.CharField(max_length=10, help_text="A project id from 1.")
