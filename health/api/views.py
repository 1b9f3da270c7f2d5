"""Disk health API: every disk's last read (?host=name), a read of a host now, a self-test started or aborted;
every change to a host is 202 + the Operation."""

from drf_spectacular.utils import extend_schema
from rest_framework import viewsets
from rest_framework.decorators import action

from appliance.api.base import ACCEPTED, accepted, by_host, valid
from appliance.api.serializers import HostRequest
from health import selectors, services
from health.api import serializers as s


class DiskHealthViewSet(viewsets.ReadOnlyModelViewSet):
    """Each disk's SMART data as last read, the state Tarn gave it and why. Filter: ?host=name."""

    serializer_class = s.DiskHealthSerializer

    def get_queryset(self):
        return by_host(selectors.disks_all(), self.request)

    @extend_schema(request=HostRequest, responses=ACCEPTED)
    @action(detail=False, methods=["post"])
    def read(self, request):
        """Read every disk of a host now (a sleeping disk stays asleep)."""
        host = valid(HostRequest, request).validated_data["host"]
        return accepted(services.health_read_start(host=host, user=request.user))

    @extend_schema(request=s.SelfTestRequest, responses=ACCEPTED)
    @action(detail=True, methods=["post"], url_path="self-test")
    def self_test(self, request, pk=None):
        """Start a short or long self-test (one at a time per disk)."""
        disk = self.get_object()
        kind = valid(s.SelfTestRequest, request).validated_data["kind"]
        return accepted(services.self_test_start(host=disk.host, user=request.user, device=disk.device, kind=kind))

    @extend_schema(request=None, responses=ACCEPTED)
    @action(detail=True, methods=["post"])
    def abort(self, request, pk=None):
        """Abort the self-test the disk is running."""
        disk = self.get_object()
        return accepted(services.self_test_abort(host=disk.host, user=request.user, device=disk.device))
