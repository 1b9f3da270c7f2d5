"""Backups API shapes. A passphrase is write-only and never echoed."""

from rest_framework import serializers

from appliance.api.serializers import ConfirmField, HostField, secret_field
from appliance.choices import Every
from appliance.fields import WEEKDAY_HELP, ApiIntegerField
from backups.choices import KEEP_MAX, MADE_ELSEWHERE, PASSPHRASE_MAX
from backups.models import Backup, BackupSchedule


class BackupSerializer(serializers.ModelSerializer):
    user = serializers.CharField(source="user.username", default="", read_only=True)
    pushed_to = serializers.CharField(source="pushed_to.name", default=None, read_only=True)

    class Meta:
        model = Backup
        fields = ["id", "name", "origin", "user", "size", "sha256", "manifest", "pushed_to", "push_error", "checked"]
        fields += ["checked_at", "created_at"]
        read_only_fields = fields


class BackupRequest(serializers.Serializer):
    passphrase = secret_field(PASSPHRASE_MAX)
    passphrase_confirm = secret_field(PASSPHRASE_MAX)
    include_series = serializers.BooleanField(default=False)


class BackupUploadRequest(serializers.Serializer):
    file = serializers.FileField(help_text="A .tarnbackup file.")


class BackupCheckRequest(serializers.Serializer):
    passphrase = secret_field(PASSPHRASE_MAX)


class BackupRestoreRequest(serializers.Serializer):
    passphrase = secret_field(PASSPHRASE_MAX)
    confirm = ConfirmField(max_length=100, help_text="The backup's name, typed again.")
    accept = serializers.CharField(
        max_length=40,
        required=False,
        default="",
        help_text=f'"{MADE_ELSEWHERE}", to restore a backup the dry run says this Tarn did not make (checked.made_here).',
    )


class BackupDeleteRequest(serializers.Serializer):
    confirm = ConfirmField(max_length=100, help_text="The backup's name, typed again.")


class BackupScheduleSerializer(serializers.ModelSerializer):
    push_host = HostField(required=False, allow_null=True)
    keep = ApiIntegerField(min_value=1, max_value=KEEP_MAX, required=False)
    hour = ApiIntegerField(min_value=0, max_value=23, required=False)
    weekday = ApiIntegerField(min_value=0, max_value=6, required=False, help_text=WEEKDAY_HELP)
    day = ApiIntegerField(min_value=1, max_value=28, required=False)
    every = serializers.ChoiceField(choices=Every.choices, required=False)
    passphrase = secret_field(PASSPHRASE_MAX)
    passphrase_confirm = secret_field(PASSPHRASE_MAX)
    key_set = serializers.SerializerMethodField()

    class Meta:
        model = BackupSchedule
        fields = ["enabled", "every", "weekday", "day", "hour", "keep", "push_host", "include_series", "passphrase"]
        fields += ["passphrase_confirm", "key_set", "last_started_at", "last_error", "last_error_at"]
        read_only_fields = ["last_started_at", "last_error", "last_error_at"]

    def get_key_set(self, obj) -> bool:
        return bool(obj.recipient)
