"""Disk health API: every disk's last read (?host=name), a read of a host now, a self-test started or aborted;
every change to a host is 202 + the Operation."""

from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

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


@extend_schema_view(create=extend_schema(request=s.SelfTestRunRequest, responses={201: s.SelfTestRunSerializer}))
class SelfTestRunViewSet(mixins.CreateModelMixin, viewsets.ReadOnlyModelViewSet):
    """Self-tests of every disk of a host, one disk per vdev at a time. Filter: ?host=name."""

    serializer_class = s.SelfTestRunSerializer

    def get_queryset(self):
        return by_host(selectors.runs_all(), self.request)

    def create(self, request):
        d = valid(s.SelfTestRunRequest, request).validated_data
        run = services.self_test_run_start(user=request.user, **d)
        return Response(s.SelfTestRunSerializer(run).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=None, responses=ACCEPTED)
    @action(detail=True, methods=["post"])
    def cancel(self, request, pk=None):
        """Abort the disks testing now and start no more."""
        return accepted(services.self_test_run_cancel(run=self.get_object(), user=request.user))


@extend_schema_view(
    create=extend_schema(request=s.SelfTestScheduleRequest, responses={201: s.SelfTestScheduleSerializer})
)
class SelfTestScheduleViewSet(mixins.CreateModelMixin, mixins.DestroyModelMixin, viewsets.ReadOnlyModelViewSet):
    """When every disk of a host is self-tested (daily, weekly or monthly at an hour). Filter: ?host=name."""

    serializer_class = s.SelfTestScheduleSerializer

    def get_queryset(self):
        return by_host(selectors.schedules_all(), self.request)

    def create(self, request):
        d = valid(s.SelfTestScheduleRequest, request).validated_data
        schedule = services.schedule_save(**d)
        return Response(s.SelfTestScheduleSerializer(schedule).data, status=status.HTTP_201_CREATED)

    def perform_destroy(self, instance):
        services.schedule_delete(schedule=instance)
