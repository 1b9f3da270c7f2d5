"""Encryption API shapes. A passphrase or key is write-only and never echoed."""

from rest_framework import serializers

from appliance.api.serializers import ConfirmField, HostField, secret_field
from appliance.fields import ApiIntegerField, ApiPassphraseRoundsField
from encryption import selectors
from encryption.choices import PASSPHRASE_MAX, Cipher, KeyFormat
from hostlib import zfs
from hostlib.names import PropertyErrors


def _check_typed(host, roots: list[str], secret: str, field: str) -> None:
    """A secret typed for these roots is their key or a 400 naming the field (zfs.typed_secret)."""
    formats = selectors.key_formats(host=host)
    try:
        zfs.typed_secret({r: formats[r] for r in roots if r in formats}, secret, field)
    except PropertyErrors as exc:
        raise serializers.ValidationError(exc.problems) from None


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
    pbkdf2iters = ApiPassphraseRoundsField()
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

    def validate(self, attrs):
        _check_typed(attrs["host"], attrs["roots"], attrs["secret"], "secret")
        return attrs


class LockRequest(serializers.Serializer):
    host = HostField()
    root = serializers.CharField(max_length=255)
    force = serializers.BooleanField(default=False)


class ChangeKeyRequest(serializers.Serializer):
    host = HostField()
    root = serializers.CharField(max_length=255)
    confirm = ConfirmField(help_text="The encryption root's name, typed again.")
    current_secret = secret_field(2048)
    inherit = serializers.BooleanField(default=False)
    keyformat = serializers.ChoiceField(choices=KeyFormat.choices, default=KeyFormat.PASSPHRASE)
    new_passphrase = secret_field(PASSPHRASE_MAX * 4)
    new_passphrase_confirm = secret_field(PASSPHRASE_MAX * 4)
    pbkdf2iters = ApiPassphraseRoundsField()
    escrow = serializers.BooleanField(default=False)

    def validate(self, attrs):
        _check_typed(attrs["host"], [attrs["root"]], attrs["current_secret"], "current_secret")
        return attrs


class ExportRequest(serializers.Serializer):
    host = HostField()
    roots = serializers.ListField(child=serializers.CharField(max_length=255), required=False, default=list)
    confirm = ConfirmField(help_text="The dataset's name (one root) or the host's (all).")
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


class RetiredKeySerializer(serializers.Serializer):
    id = ApiIntegerField(read_only=True)
    host = serializers.CharField(source="host.name", read_only=True)
    dataset = serializers.CharField(read_only=True)
    keyformat = serializers.CharField(read_only=True)
    sealed = serializers.SerializerMethodField(help_text="Tarn keeps it sealed (the key itself is never shown).")
    keyfile = serializers.CharField(read_only=True, help_text="Its key file left on the NAS; empty: none.")
    retired_at = serializers.DateTimeField(read_only=True)
    retired_by = serializers.CharField(source="retired_by.username", read_only=True, default="")

    def get_sealed(self, key) -> bool:
        return bool(key.sealed)
