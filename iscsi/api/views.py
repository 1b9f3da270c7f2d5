"""iSCSI API: targets (with their LUNs and initiators) read, made and removed; LUNs added and removed; initiators
allowed and refused; who is logged in read. Each change answers 202 with the Operation that applies it."""

from drf_spectacular.utils import extend_schema
from rest_framework import viewsets
from rest_framework.decorators import action

from appliance.api.base import ACCEPTED, accepted, by_host, valid
from appliance.api.serializers import ConfirmRequest
from iscsi import services
from iscsi.api import serializers as s
from iscsi.models import Initiator, Lun, Target


class IscsiTargetViewSet(viewsets.ReadOnlyModelViewSet):
    """iSCSI targets."""

    serializer_class = s.TargetSerializer

    def get_queryset(self):
        return by_host(Target.objects.select_related("host").prefetch_related("luns", "initiators"), self.request)

    @extend_schema(request=s.TargetRequest, responses=ACCEPTED)
    def create(self, request):
        """A target: its IQN and portal (0.0.0.0: every address of the NAS)."""
        return accepted(services.target_save_start(user=request.user, **valid(s.TargetRequest, request).validated_data))

    @extend_schema(request=ConfirmRequest, responses=ACCEPTED)
    def destroy(self, request, pk=None):
        """Remove the target and its LUNs (the zvols stay); confirm: its IQN."""
        row = self.get_object()
        d = valid(ConfirmRequest, request).validated_data
        return accepted(services.target_delete_start(host=row.host, user=request.user, pk=row.pk, confirm=d["confirm"]))

    @extend_schema(request=s.SessionsRequest, responses=ACCEPTED)
    @action(detail=False, methods=["post"])
    def sessions(self, request):
        """Read who is logged in (kept on each target's `sessions`)."""
        d = valid(s.SessionsRequest, request).validated_data
        return accepted(services.sessions_read_start(user=request.user, **d))


class IscsiLunViewSet(viewsets.GenericViewSet):
    """A target's LUNs."""

    serializer_class = s.LunSerializer

    def get_queryset(self):
        return by_host(Lun.objects.select_related("host", "target"), self.request)

    @extend_schema(request=s.LunRequest, responses=ACCEPTED)
    def create(self, request):
        """Serve a zvol as a LUN of a target (the next free number unless given)."""
        return accepted(services.lun_add_start(user=request.user, **valid(s.LunRequest, request).validated_data))

    @extend_schema(request=ConfirmRequest, responses=ACCEPTED)
    def destroy(self, request, pk=None):
        """Stop serving the zvol; confirm: its name."""
        row = self.get_object()
        d = valid(ConfirmRequest, request).validated_data
        return accepted(services.lun_remove_start(host=row.host, user=request.user, pk=row.pk, confirm=d["confirm"]))


class IscsiInitiatorViewSet(viewsets.GenericViewSet):
    """The initiators allowed into a target."""

    serializer_class = s.InitiatorSerializer

    def get_queryset(self):
        return by_host(Initiator.objects.select_related("target__host"), self.request, field="target__host__name")

    @extend_schema(request=s.InitiatorRequest, responses=ACCEPTED)
    def create(self, request):
        """Allow an initiator, with CHAP (12-16 characters) and mutual CHAP, or none."""
        d = valid(s.InitiatorRequest, request).validated_data
        return accepted(services.initiator_save_start(user=request.user, **d))

    @extend_schema(request=ConfirmRequest, responses=ACCEPTED)
    def destroy(self, request, pk=None):
        """Refuse the initiator (its sessions end); confirm: its name."""
        row = self.get_object()
        d = valid(ConfirmRequest, request).validated_data
        host = row.target.host
        return accepted(services.initiator_remove_start(host=host, user=request.user, pk=row.pk, confirm=d["confirm"]))
