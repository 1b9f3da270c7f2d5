"""Benchmark API: runs (filter: ?host=name); POST starts a storage run, …/network/ an iperf3 run (202, the run to
follow), …/cancel/ stops one; suites (profiles × a property sweep); schedules (cron, editable)."""

from drf_spectacular.utils import extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from appliance.api.views import by_host, valid
from benchmarks import services
from benchmarks.api import serializers as s
from benchmarks.models import Run, Schedule, Suite


class RunViewSet(mixins.CreateModelMixin, viewsets.ReadOnlyModelViewSet):
    serializer_class = s.RunSerializer

    def get_queryset(self):
        return by_host(Run.objects.select_related("host", "peer"), self.request)

    @extend_schema(request=s.RunRequest, responses={202: s.RunSerializer})
    def create(self, request):
        run = services.benchmark_start(user=request.user, **valid(s.RunRequest, request).validated_data)
        return Response(s.RunSerializer(run).data, status=status.HTTP_202_ACCEPTED)

    @extend_schema(request=s.ShareRunRequest, responses={202: s.RunSerializer})
    @action(detail=False, methods=["post"])
    def share(self, request):
        """A storage profile on an SMB share or NFS export mounted on the host itself over loopback."""
        run = services.benchmark_share_start(user=request.user, **valid(s.ShareRunRequest, request).validated_data)
        return Response(s.RunSerializer(run).data, status=status.HTTP_202_ACCEPTED)

    @extend_schema(request=s.NetworkRunRequest, responses={202: s.RunSerializer})
    @action(detail=False, methods=["post"])
    def network(self, request):
        """iperf3 between a peer host and one of the host's addresses, both directions."""
        run = services.benchmark_network_start(user=request.user, **valid(s.NetworkRunRequest, request).validated_data)
        return Response(s.RunSerializer(run).data, status=status.HTTP_202_ACCEPTED)

    @extend_schema(request=None, responses={202: s.RunSerializer})
    @action(detail=True, methods=["post"])
    def cancel(self, request, pk=None):
        run = self.get_object()
        services.benchmark_cancel(run=run, user=request.user)
        run.refresh_from_db()
        return Response(s.RunSerializer(run).data, status=status.HTTP_202_ACCEPTED)

    @extend_schema(request=None, responses={202: s.RunSerializer})
    @action(detail=True, methods=["post"])
    def again(self, request, pk=None):
        """Run again exactly what this run ran (its manifest's jobs and properties, on its target)."""
        run = services.benchmark_again(run=self.get_object(), user=request.user)
        return Response(s.RunSerializer(run).data, status=status.HTTP_202_ACCEPTED)


class SuiteViewSet(mixins.CreateModelMixin, viewsets.ReadOnlyModelViewSet):
    serializer_class = s.SuiteSerializer

    def get_queryset(self):
        return by_host(Suite.objects.select_related("host").prefetch_related("runs"), self.request)

    @extend_schema(request=s.SuiteRequest, responses={202: s.SuiteSerializer})
    def create(self, request):
        suite = services.suite_start(user=request.user, **valid(s.SuiteRequest, request).validated_data)
        return Response(s.SuiteSerializer(suite).data, status=status.HTTP_202_ACCEPTED)


EDITABLE = ["name", "profiles", "target", "size", "runtime", "cache_ok", "minute", "hour", "day_of_week",
            "drop_percent", "enabled"]  # fmt: skip


class ScheduleViewSet(viewsets.ModelViewSet):
    """Benchmark schedules; deleting needs ?confirm=<name>."""

    serializer_class = s.ScheduleSerializer

    def get_queryset(self):
        return by_host(Schedule.objects.select_related("host"), self.request)

    def perform_create(self, serializer):
        data = dict(serializer.validated_data)
        serializer.instance = services.schedule_save(host=data.pop("host"), user=self.request.user, data=data)

    def perform_update(self, serializer):
        data = dict(serializer.validated_data)
        data.pop("host", None)
        instance = serializer.instance
        current = {f: getattr(instance, f) for f in EDITABLE}
        serializer.instance = services.schedule_save(host=instance.host, user=self.request.user,
                                                     data={**current, **data}, pk=instance.pk)  # fmt: skip

    def perform_destroy(self, instance):
        services.schedule_delete(
            schedule=instance, user=self.request.user, confirm=self.request.query_params.get("confirm", "")
        )
