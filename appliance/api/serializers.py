"""API serializers for hosts, operations and audit entries."""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from appliance.choices import Role, RunStatus
from appliance.fields import SERIALIZER_FIELD_MAPPING, ApiIntegerField
from appliance.forms import HostForm
from appliance.models import AuditEntry, Host, Operation


class ModelSerializer(serializers.ModelSerializer):
    """Every app's model serializer: integer and float model fields read the digits 0-9 only (appliance.fields)."""

    serializer_field_mapping = SERIALIZER_FIELD_MAPPING


class RunStatusField(serializers.ChoiceField):
    """A run's status, read-only, in the one vocabulary every app's runs share (appliance.choices.RunStatus)."""

    def __init__(self, **kwargs):
        kwargs.setdefault("help_text", "The run's status; what it found beyond that is in its own fields.")
        super().__init__(choices=RunStatus.choices, read_only=True, **kwargs)


class HostSerializer(ModelSerializer):
    class Meta:
        model = Host
        fields = [
            "id",
            "name",
            "transport",
            "address",
            "port",
            "username",
            "read_only",
            "facts",
            "facts_error",
            "observed_at",
            "created_at",
        ]
        read_only_fields = fields


class HostCreateSerializer(serializers.Serializer):
    """Same fields and checks as the HTML form (one definition of shape: HostForm)."""

    name = serializers.CharField(max_length=40)
    address = serializers.CharField(max_length=253)
    port = ApiIntegerField(min_value=1, max_value=65535, default=22)
    username = serializers.CharField(max_length=32, default="root")
    identity_file = serializers.CharField(max_length=255, required=False, allow_blank=True, default="")
    host_keys = serializers.CharField(required=False, allow_blank=True, default="")
    read_only = serializers.BooleanField(default=False)

    def validate(self, attrs):
        form = HostForm(data=attrs)
        if not form.is_valid():
            raise serializers.ValidationError(
                {k: [e["message"] for e in v] for k, v in form.errors.get_json_data().items()}
            )
        return form.cleaned_data


class OperationSerializer(ModelSerializer):
    host = serializers.SlugRelatedField(slug_field="name", read_only=True)
    user = serializers.SlugRelatedField(slug_field="username", read_only=True)

    class Meta:
        model = Operation
        fields = [
            "id",
            "kind",
            "target",
            "host",
            "params",
            "status",
            "progress",
            "message",
            "log",
            "user",
            "created_at",
            "started_at",
            "finished_at",
        ]
        read_only_fields = fields


class AuditEntrySerializer(ModelSerializer):
    params = serializers.SerializerMethodField(
        help_text="The request's parameters, secrets masked; null unless you are an admin."
    )

    class Meta:
        model = AuditEntry
        fields = [
            "id",
            "kind",
            "at",
            "username",
            "auth",
            "token",
            "host_name",
            "operation",
            "params",
            "method",
            "path",
            "status_code",
            "address",
            "argv",
            "exit_code",
            "duration_ms",
        ]
        read_only_fields = fields

    @extend_schema_field(OpenApiTypes.OBJECT)
    def get_params(self, entry):
        """Parameters are for admins: what an admin typed (a channel's settings, a host's address) is not a
        viewer's to read, even with its secrets masked."""
        request = self.context.get("request")
        user = getattr(request, "user", None)
        return entry.params if user is not None and user.is_authenticated and user.has_role(Role.ADMIN) else None


# --- request pieces every app's API uses --------------------------------------------------------------------
class HostField(serializers.SlugRelatedField):
    def __init__(self, **kwargs):
        super().__init__(slug_field="name", queryset=Host.objects.all(), **kwargs)


class HostRequest(serializers.Serializer):
    host = HostField()


class ConfirmField(serializers.CharField):
    """The object's name typed again before a destructive step, exactly as typed (never trimmed, as the pages' field:
    appliance.forms.ConfirmField); the service compares it (appliance.checks.confirmed)."""

    def __init__(self, *, help_text: str = "The object's name, typed again.", max_length: int = 255, **kwargs):
        super().__init__(help_text=help_text, max_length=max_length, trim_whitespace=False, **kwargs)


class ConfirmRequest(serializers.Serializer):
    confirm = ConfirmField()


class SecretField(serializers.CharField):
    """A passphrase or key: text only. DRF's CharField turns a JSON number into its digits (100000000.0 becomes the
    passphrase "100000000.0"), and a secret is what the admin typed or an error naming the field."""

    default_error_messages = {"not_text": "Give it as text (a JSON string), not a number, list or object."}

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("not_text")
        return super().to_internal_value(data)


def secret_field(max_length: int = 2048, **kwargs):
    """A passphrase or key in a request: optional, text only, taken as typed (no trimming), never echoed back. Name
    it so the audit masks it (appliance.audit.redact: passphrase, secret…)."""
    return SecretField(
        required=False,
        allow_blank=True,
        default="",
        trim_whitespace=False,
        max_length=max_length,
        write_only=True,
        **kwargs,
    )


class FleetRowSerializer(serializers.Serializer):
    host = serializers.CharField(source="host.name")
    host_id = ApiIntegerField(source="host.pk", read_only=True)
    attention = serializers.BooleanField(help_text="A cell is warn or bad.")
    cells = serializers.SerializerMethodField(help_text="{column key: {text, level}}")

    def get_cells(self, row) -> dict[str, dict[str, str]]:
        return {
            c.key: {"text": cell.text, "level": cell.level}
            for c, cell in zip(self.context["columns"], row.cells, strict=True)
        }
