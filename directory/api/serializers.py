"""Directory API shapes: a host's membership and its last check, a join (the password write-only, never echoed),
a leave; an LDAP directory, its set-up (the bind password write-only) and removal; the names as shares write
them."""

from rest_framework import serializers

from appliance.api.serializers import ConfirmField, HostField
from directory.choices import Backend, LdapSchema, LdapTls
from directory.forms import RANGE
from directory.models import DirectoryName, DomainMember, LdapDirectory
from directory.selectors import written
from hostlib.directory import IdRange


class DomainMemberSerializer(serializers.ModelSerializer):
    host = serializers.SlugRelatedField(slug_field="name", read_only=True)
    healthy = serializers.BooleanField(read_only=True)

    class Meta:
        model = DomainMember
        fields = [
            "id",
            "host",
            "realm",
            "workgroup",
            "dc",
            "netbios_name",
            "backend",
            "default_range",
            "domain_range",
            "joined_at",
            "joined_by",
            "healthy",
            "checked_at",
            "reachable",
            "dc_name",
            "clock_offset",
            "password_changed",
            "testjoin_ok",
            "trust_ok",
            "winbind_ok",
            "said",
            "names_refreshed_at",
            "names_seconds",
            "names_left_out",
        ]
        read_only_fields = fields


class RangeField(serializers.CharField):
    def to_internal_value(self, data):
        match = RANGE.fullmatch(super().to_internal_value(data))
        if not match:
            raise serializers.ValidationError("Two ids, low-high, such as 200000-2199999.")
        return IdRange(int(match.group(1)), int(match.group(2)))


class JoinRequest(serializers.Serializer):
    host = HostField()
    realm = serializers.CharField(max_length=253)
    workgroup = serializers.CharField(max_length=15)
    dc = serializers.CharField(max_length=253, required=False, allow_blank=True, default="")
    backend = serializers.ChoiceField(choices=Backend.choices, default=Backend.RID)
    default_range = RangeField(default=IdRange(100000, 199999), help_text="low-high; default 100000-199999")
    domain_range = RangeField(default=IdRange(200000, 2199999), help_text="low-high; default 200000-2199999")
    username = serializers.CharField(max_length=20)
    password = serializers.CharField(max_length=127, write_only=True, trim_whitespace=False)
    sessions_ok = serializers.BooleanField(default=False)


class LeaveRequest(serializers.Serializer):
    username = serializers.CharField(max_length=20, required=False, allow_blank=True, default="")
    password = serializers.CharField(
        max_length=127, write_only=True, trim_whitespace=False, required=False, allow_blank=True, default=""
    )
    local_only = serializers.BooleanField(default=False)
    confirm = ConfirmField(help_text="The realm, typed again.")


class LdapDirectorySerializer(serializers.ModelSerializer):
    host = serializers.SlugRelatedField(slug_field="name", read_only=True)
    healthy = serializers.BooleanField(read_only=True)

    class Meta:
        model = LdapDirectory
        fields = [
            "id",
            "host",
            "uri",
            "tls",
            "base_dn",
            "bind_dn",
            "schema",
            "ca_pem",
            "configured_at",
            "configured_by",
            "healthy",
            "checked_at",
            "reachable",
            "sssd_ok",
            "said",
            "names_refreshed_at",
            "names_seconds",
            "names_left_out",
        ]
        read_only_fields = fields


class LdapRequest(serializers.Serializer):
    host = HostField()
    uri = serializers.CharField(max_length=300)
    tls = serializers.ChoiceField(choices=LdapTls.choices, default=LdapTls.STARTTLS)
    base_dn = serializers.CharField(max_length=1000)
    bind_dn = serializers.CharField(max_length=1000, required=False, allow_blank=True, default="")
    bind_password = serializers.CharField(
        max_length=256, write_only=True, trim_whitespace=False, required=False, allow_blank=True, default=""
    )
    schema = serializers.ChoiceField(choices=LdapSchema.choices, default=LdapSchema.RFC2307)
    ca_pem = serializers.CharField(max_length=64_000, trim_whitespace=False, help_text="The CA's PEM.")


class LdapRemoveRequest(serializers.Serializer):
    confirm = ConfirmField(help_text="The server URI, typed again.")


class DirectoryNameSerializer(serializers.ModelSerializer):
    host = serializers.SlugRelatedField(slug_field="name", read_only=True)
    written = serializers.SerializerMethodField(
        help_text="As a share's valid users takes it: LAB\\alice, @LAB\\staff (an LDAP directory's: alice, @staff)."
    )

    class Meta:
        model = DirectoryName
        fields = ["id", "host", "kind", "name", "written"]
        read_only_fields = fields

    def get_written(self, row) -> str:
        return written(getattr(row.host, "domain_member", None), row.name, row.kind)
