"""Encryption API shapes. A passphrase or key is write-only and never echoed."""

from rest_framework import serializers

from appliance.api.serializers import HostField, secret_field
from appliance.fields import ApiIntegerField
from encryption.choices import PASSPHRASE_MAX, Cipher, KeyFormat


class EncryptionRootSerializer(serializers.Serializer):
    name = serializers.CharField(read_only=True)
    locked = serializers.BooleanField(read_only=True)
    cipher = serializers.CharField(source="encryption.cipher", read_only=True)
    keystatus = serializers.CharField(source="encryption.key", read_only=True)
    keyformat = serializers.CharField(source="encryption.format", read_only=True)
    keylocation = serializers.CharField(source="encryption.location", read_only=True)
    members = ApiIntegerField(read_only=True, help_text="Datasets this root's key unlocks, itself included.")
    escrowed = serializers.BooleanField(read_only=True, help_text="Tarn keeps the key, sealed.")
    shares = serializers.ListField(child=serializers.CharField(), read_only=True)


class RootsQuery(serializers.Serializer):
    host = HostField()


class CreateRequest(serializers.Serializer):
    host = HostField()
    name = serializers.CharField(max_length=255)
    volume_size = serializers.CharField(required=False, allow_blank=True, default="")
    cipher = serializers.ChoiceField(choices=Cipher.choices, default=Cipher.AES_256_GCM)
    keyformat = serializers.ChoiceField(choices=KeyFormat.choices, default=KeyFormat.PASSPHRASE)
    passphrase = secret_field(PASSPHRASE_MAX * 4)
    passphrase_confirm = secret_field(PASSPHRASE_MAX * 4)
    escrow = serializers.BooleanField(default=False)


class UnlockRequest(serializers.Serializer):
    host = HostField()
    roots = serializers.ListField(child=serializers.CharField(max_length=255), min_length=1, max_length=1000)
    secret = secret_field(2048)
    key_export = serializers.CharField(
        required=False, allow_blank=True, default="", max_length=1 << 20, help_text="A Tarn key export (.age), base64."
    )
    key_export_passphrase = secret_field(2048)
    dry_run = serializers.BooleanField(default=False)


class LockRequest(serializers.Serializer):
    host = HostField()
    root = serializers.CharField(max_length=255)
    force = serializers.BooleanField(default=False)


class ChangeKeyRequest(serializers.Serializer):
    host = HostField()
    root = serializers.CharField(max_length=255)
    current_secret = secret_field(2048)
    inherit = serializers.BooleanField(default=False)
    keyformat = serializers.ChoiceField(choices=KeyFormat.choices, default=KeyFormat.PASSPHRASE)
    new_passphrase = secret_field(PASSPHRASE_MAX * 4)
    new_passphrase_confirm = secret_field(PASSPHRASE_MAX * 4)
    escrow = serializers.BooleanField(default=False)


class ExportRequest(serializers.Serializer):
    host = HostField()
    roots = serializers.ListField(child=serializers.CharField(max_length=255), required=False, default=list)
    confirm = serializers.CharField(max_length=255, help_text="The dataset's name (one root) or the host's (all).")
    export_passphrase = secret_field(PASSPHRASE_MAX * 4)
    export_passphrase_confirm = secret_field(PASSPHRASE_MAX * 4)


class KeyExportSerializer(serializers.Serializer):
    id = ApiIntegerField(read_only=True)
    host = serializers.CharField(source="host.name", read_only=True)
    user = serializers.CharField(source="user.username", read_only=True, default="")
    roots = serializers.ListField(child=serializers.CharField(), read_only=True)
    left_out = serializers.ListField(child=serializers.CharField(), read_only=True)
    created_at = serializers.DateTimeField(read_only=True)
    filename = serializers.CharField(read_only=True)
