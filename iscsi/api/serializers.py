"""iSCSI API shapes: targets with their LUNs and initiators (secrets write-only, never read back), and the
requests that change them."""

from rest_framework import serializers

from appliance.api.serializers import HostField, secret_field
from appliance.fields import ApiIntegerField
from hostlib.iscsi import CHAP_MAX, MAX_LUNS, MAX_NAME, MAX_PORTALS
from iscsi.choices import ALL_PORTALS
from iscsi.models import Initiator, Lun, Target


class LunSerializer(serializers.ModelSerializer):
    number = ApiIntegerField(read_only=True)

    class Meta:
        model = Lun
        fields = ["id", "number", "zvol", "serial", "write_back", "read_only"]


class InitiatorSerializer(serializers.ModelSerializer):
    chap = serializers.SerializerMethodField()

    class Meta:
        model = Initiator
        fields = ["id", "iqn", "chap_user", "mutual_user", "chap"]

    def get_chap(self, row) -> str:
        """none, chap or mutual (the secrets are sealed and never read back)."""
        return "mutual" if row.mutual_secret else ("chap" if row.chap_secret else "none")


class TargetSerializer(serializers.ModelSerializer):
    host = serializers.CharField(source="host.name")
    luns = LunSerializer(many=True, read_only=True)
    initiators = InitiatorSerializer(many=True, read_only=True)
    portals = serializers.ListField(source="portal_texts", child=serializers.CharField(), read_only=True)

    class Meta:
        model = Target
        fields = ["id", "host", "iqn", "portals", "enabled", "luns", "initiators", "sessions",
                  "sessions_read_at"]  # fmt: skip


class TargetRequest(serializers.Serializer):
    host = HostField()
    pk = ApiIntegerField(required=False, allow_null=True, default=None, help_text="A target's id: change it.")
    iqn = serializers.CharField(max_length=MAX_NAME)
    portals = serializers.ListField(
        child=serializers.CharField(max_length=60), min_length=1, max_length=MAX_PORTALS, default=[ALL_PORTALS],
        help_text="address, address:port or [IPv6]:port (3260 when none is given); 0.0.0.0: every address.",
    )  # fmt: skip
    enabled = serializers.BooleanField(default=True)


class LunRequest(serializers.Serializer):
    host = HostField()
    target = ApiIntegerField()
    zvol = serializers.CharField(max_length=255)
    number = ApiIntegerField(min_value=0, max_value=MAX_LUNS - 1, required=False, allow_null=True, default=None)
    write_back = serializers.BooleanField(default=False, help_text="Faster writes; unsafe without a UPS.")
    read_only = serializers.BooleanField(default=False)


class InitiatorRequest(serializers.Serializer):
    host = HostField()
    pk = ApiIntegerField(required=False, allow_null=True, default=None, help_text="An initiator's id: change it.")
    target = ApiIntegerField()
    iqn = serializers.CharField(max_length=MAX_NAME)
    chap_user = serializers.CharField(max_length=255, required=False, allow_blank=True, default="")
    chap_secret = secret_field(max_length=CHAP_MAX, help_text="12-16 characters; empty on a change: kept.")
    mutual_user = serializers.CharField(max_length=255, required=False, allow_blank=True, default="")
    mutual_secret = secret_field(max_length=CHAP_MAX, help_text="12-16 characters, not the CHAP secret.")


class SessionsRequest(serializers.Serializer):
    host = HostField()
