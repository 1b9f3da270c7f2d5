"""Tuning API: links, change sets (plan → apply → keep or revert), single settings, MTU and bridges. Reads are
open to viewers; every change is admin-only and answers 202 with the change set to follow (a refresh of links and
values: the operation)."""

from drf_spectacular.utils import extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from appliance.api.base import ACCEPTED, accepted, by_host, valid
from appliance.api.serializers import HostRequest
from appliance.choices import Role
from tuning import services
from tuning.api import serializers as s
from tuning.models import ChangeSet, Link, Setting

CHANGE = {202: s.ChangeSetSerializer}


def started(cs: ChangeSet) -> Response:
    cs.refresh_from_db()
    return Response(s.ChangeSetSerializer(cs).data, status=status.HTTP_202_ACCEPTED)


class _AdminWrites:
    def get_required_role(self, request):
        return None if request.method in ("GET", "HEAD", "OPTIONS") else Role.ADMIN


class LinkViewSet(_AdminWrites, viewsets.ReadOnlyModelViewSet):
    """Network links as last read (filter: ?host=name). MTU changes, bridges, bonds and VLANs arm a rollback on the
    host."""

    serializer_class = s.LinkSerializer

    def get_queryset(self):
        return by_host(Link.objects.select_related("host"), self.request)

    @extend_schema(request=HostRequest, responses=ACCEPTED)
    @action(detail=False, methods=["post"])
    def refresh(self, request):
        """Read the host's links and its kernel and ZFS values again (202: the operation)."""
        host = valid(HostRequest, request).validated_data["host"]
        return accepted(services.tuning_refresh_start(host=host, user=request.user))

    @extend_schema(request=s.MtuRequest, responses=CHANGE)
    @action(detail=False, methods=["post"])
    def mtu(self, request):
        """Set a link's MTU; with peers, each must answer a full-size DF ping or the MTU is put back at once."""
        return started(services.link_mtu_start(user=request.user, **valid(s.MtuRequest, request).validated_data))

    @extend_schema(request=s.BridgeRequest, responses=CHANGE)
    @action(detail=False, methods=["post"])
    def bridge(self, request):
        """Bridge NICs (their addresses move to the bridge); the management link needs management_ok."""
        data = valid(s.BridgeRequest, request).validated_data
        return started(services.bridge_create_start(user=request.user, **data))

    @extend_schema(request=s.LinkDeleteRequest, responses=CHANGE)
    @action(detail=False, methods=["post"], url_path="bridge-delete")
    def bridge_delete(self, request):
        data = valid(s.LinkDeleteRequest, request).validated_data
        return started(services.bridge_delete_start(user=request.user, **data))

    @extend_schema(request=s.BondRequest, responses=CHANGE)
    @action(detail=False, methods=["post"])
    def bond(self, request):
        """Bond two data NICs or more (their addresses move to the bond; never the management link)."""
        return started(services.bond_create_start(user=request.user, **valid(s.BondRequest, request).validated_data))

    @extend_schema(request=s.LinkDeleteRequest, responses=CHANGE)
    @action(detail=False, methods=["post"], url_path="bond-delete")
    def bond_delete(self, request):
        """Delete a bond (its addresses go to its first port); not one carrying VLANs."""
        data = valid(s.LinkDeleteRequest, request).validated_data
        return started(services.bond_delete_start(user=request.user, **data))

    @extend_schema(request=s.VlanRequest, responses=CHANGE)
    @action(detail=False, methods=["post"])
    def vlan(self, request):
        """An 802.1Q VLAN (id 1–4094) on a NIC, bond or bridge, with addresses of its own."""
        return started(services.vlan_create_start(user=request.user, **valid(s.VlanRequest, request).validated_data))

    @extend_schema(request=s.LinkDeleteRequest, responses=CHANGE)
    @action(detail=False, methods=["post"], url_path="vlan-delete")
    def vlan_delete(self, request):
        data = valid(s.LinkDeleteRequest, request).validated_data
        return started(services.vlan_delete_start(user=request.user, **data))


class ChangeSetViewSet(_AdminWrites, mixins.CreateModelMixin, viewsets.ReadOnlyModelViewSet):
    """Change sets (filter: ?host=name). POST plans base tuning (nothing changes until apply)."""

    serializer_class = s.ChangeSetSerializer

    def get_queryset(self):
        return by_host(
            ChangeSet.objects.select_related("host", "measure_peer").prefetch_related("settings"), self.request
        )

    @extend_schema(request=s.PlanRequest, responses=CHANGE)
    def create(self, request):
        return started(services.tuning_plan_start(user=request.user, **valid(s.PlanRequest, request).validated_data))

    @extend_schema(request=s.ApplyRequest, responses=CHANGE)
    @action(detail=True, methods=["post"])
    def apply(self, request, pk=None):
        data = valid(s.ApplyRequest, request).validated_data
        return started(services.tuning_apply_start(change_set=self.get_object(), user=request.user, **data))

    @extend_schema(request=None, responses={202: s.ChangeSetSerializer})
    @action(detail=True, methods=["post"])
    def keep(self, request, pk=None):
        cs = self.get_object()
        services.change_keep_start(change_set=cs, user=request.user)
        return started(cs)

    @extend_schema(request=None)
    @action(detail=True, methods=["post"])
    def revert(self, request, pk=None):
        """Settings: their original values back (202, the operation). A kept network change: undone as a new
        change with its own armed restore (202, the new change set; Keep it)."""
        result = services.change_revert_start(change_set=self.get_object(), user=request.user)
        return started(result) if isinstance(result, ChangeSet) else accepted(result)


class TunableViewSet(_AdminWrites, mixins.CreateModelMixin, viewsets.ReadOnlyModelViewSet):
    """Kernel and ZFS settings Tarn keeps (filter: ?host=name). POST sets one (checked against the host)."""

    serializer_class = s.SettingSerializer

    def get_queryset(self):
        return by_host(Setting.objects.filter(active=True).select_related("host"), self.request)

    @extend_schema(request=s.SettingRequest, responses=CHANGE)
    def create(self, request):
        return started(services.setting_start(user=request.user, **valid(s.SettingRequest, request).validated_data))

    @extend_schema(request=None)
    @action(detail=True, methods=["post"])
    def revert(self, request, pk=None):
        setting = self.get_object()
        return accepted(services.tuning_revert_start(host=setting.host, user=request.user, setting=setting))

    @extend_schema(request=s.DriftRequest)
    @action(detail=True, methods=["post"])
    def drift(self, request, pk=None):
        setting = self.get_object()
        act = valid(s.DriftRequest, request).validated_data["action"]
        return accepted(services.drift_start(host=setting.host, user=request.user, setting=setting, action=act))
