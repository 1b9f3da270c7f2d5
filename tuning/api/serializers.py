"""Tuning API shapes: links, change sets with their settings, and the requests that start changes."""

from rest_framework import serializers

from appliance.api.serializers import ConfirmField, HostField, HostRequest, ModelSerializer
from appliance.fields import ApiIntegerField, ApiIPAddressField
from appliance.validators import no_bidi
from hostlib import net
from tuning.choices import (
    BOND_MIIMON_DEFAULT,
    JUMBO_MTU,
    KERNEL_KINDS,
    ROLLBACK_SECONDS_DEFAULT,
    ROLLBACK_SECONDS_MAX,
    ROLLBACK_SECONDS_MIN,
    BondMode,
    HashPolicy,
    LacpRate,
)
from tuning.models import ChangeSet, Link, Setting
from tuning.profiles import DEFAULT_PROFILE, PROFILES


class LinkSerializer(ModelSerializer):
    host = serializers.SlugRelatedField(slug_field="name", read_only=True)

    class Meta:
        model = Link
        fields = [
            "id",
            "host",
            "name",
            "kind",
            "mac",
            "mtu",
            "min_mtu",
            "max_mtu",
            "state",
            "up",
            "master",
            "parent",
            "perm_mac",
            "info",
            "addresses",
            "counters",
            "driver",
            "speed_mbps",
            "rings",
            "offloads",
            "managed",
            "management",
            "observed_at",
        ]
        read_only_fields = fields


class SettingSerializer(ModelSerializer):
    class Meta:
        model = Setting
        fields = [
            "id",
            "change_set",
            "kind",
            "key",
            "original",
            "value",
            "reason",
            "source",
            "action",
            "note",
            "active",
            "reverted_at",
        ]
        read_only_fields = fields


class ChangeSetSerializer(ModelSerializer):
    host = serializers.SlugRelatedField(slug_field="name", read_only=True)
    measure_peer = serializers.SlugRelatedField(slug_field="name", read_only=True)
    settings = SettingSerializer(many=True, read_only=True)
    effect = serializers.DictField(child=serializers.FloatField(), read_only=True)

    class Meta:
        model = ChangeSet
        fields = [
            "id",
            "host",
            "kind",
            "title",
            "profile",
            "status",
            "message",
            "reason",
            "links",
            "target",
            "apply_lines",
            "restore_lines",
            "restore_unit",
            "deadline",
            "measure",
            "measure_peer",
            "measure_address",
            "before",
            "after",
            "effect",
            "revert_if_worse",
            "operation",
            "created_at",
            "ended_at",
            "settings",
        ]
        read_only_fields = fields


class PlanRequest(HostRequest):
    profile = serializers.ChoiceField(choices=list(PROFILES), default=DEFAULT_PROFILE)


class ApplyRequest(serializers.Serializer):
    measure = serializers.BooleanField(default=False)
    peer = HostField(required=False, allow_null=True, default=None, help_text="The host iperf3 runs from.")
    address = ApiIPAddressField(required=False, default="", help_text="One of the tuned host's addresses.")
    revert_if_worse = serializers.BooleanField(default=False)


class SettingRequest(HostRequest):
    kind = serializers.ChoiceField(choices=KERNEL_KINDS)
    key = serializers.CharField(max_length=100)
    value = serializers.CharField(max_length=200, trim_whitespace=False)
    reason = serializers.CharField(max_length=300, required=False, default="", allow_blank=True, validators=[no_bidi])
    confirm = ConfirmField(
        max_length=100,
        required=False,
        default="",
        allow_blank=True,
        help_text="The key again, to set a ZFS parameter that risks data (zil_replay_disable, zfs_nocacheflush …).",
    )


class DriftRequest(serializers.Serializer):
    action = serializers.ChoiceField(choices=["reapply", "forget"])


def _seconds():
    return ApiIntegerField(
        min_value=ROLLBACK_SECONDS_MIN, max_value=ROLLBACK_SECONDS_MAX, default=ROLLBACK_SECONDS_DEFAULT
    )


def _ifname(**kwargs):
    """A link's name exactly as sent: DRF would trim "enp0s17 " to another name; the service refuses it instead."""
    return serializers.CharField(max_length=15, trim_whitespace=False, **kwargs)


class MtuRequest(HostRequest):
    link = _ifname(help_text="A NIC, bond, VLAN or bridge.")
    mtu = ApiIntegerField(min_value=68, max_value=65535, default=JUMBO_MTU)
    peers = serializers.ListField(child=ApiIPAddressField(), max_length=16, default=list)
    seconds = _seconds()


class BridgeRequest(HostRequest):
    name = _ifname()
    ports = serializers.ListField(child=_ifname(), min_length=1, max_length=8, help_text="NICs, each once.")
    management_ok = serializers.BooleanField(default=False)
    seconds = _seconds()


class LinkDeleteRequest(HostRequest):
    name = _ifname()
    confirm = ConfirmField(max_length=15, help_text="The bridge's, bond's or VLAN's name, typed again.")
    seconds = _seconds()


class BondRequest(HostRequest):
    name = _ifname()
    ports = serializers.ListField(
        child=_ifname(), min_length=1, max_length=8, help_text="Data NICs, each once (two or more)."
    )
    mode = serializers.ChoiceField(choices=BondMode.choices, default=BondMode.ACTIVE_BACKUP)
    miimon = ApiIntegerField(min_value=net.MIIMON_MIN, max_value=net.MIIMON_MAX, default=BOND_MIIMON_DEFAULT)
    lacp_rate = serializers.ChoiceField(choices=LacpRate.choices, default="", help_text="802.3ad only.")
    xmit_hash_policy = serializers.ChoiceField(choices=HashPolicy.choices, default="", help_text="802.3ad only.")
    seconds = _seconds()


class VlanRequest(HostRequest):
    link = _ifname(help_text="A NIC, bond or bridge (not a port of one).")
    vid = ApiIntegerField(min_value=net.VLAN_ID_MIN, max_value=net.VLAN_ID_MAX)
    name = serializers.CharField(max_length=15, trim_whitespace=False, default="", allow_blank=True)
    addresses = serializers.ListField(
        child=serializers.CharField(max_length=64), max_length=16, default=list, help_text="e.g. 192.0.2.10/24"
    )
    seconds = _seconds()
