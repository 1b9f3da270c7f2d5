"""Benchmark API: profiles (built in, and admins' copies); runs (filter: ?host=name): POST starts a storage run,
…/share/ one over SMB or NFS, …/network/ an iperf3 run (202, the run to follow), …/cancel/ stops one; suites
(profiles × a property sweep); schedules (cron, editable)."""

from dataclasses import asdict

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound
from rest_framework.response import Response

from appliance.api.base import by_host, valid
from appliance.auth import requires
from appliance.choices import Role
from benchmarks import services
from benchmarks.api import serializers as s
from benchmarks.models import CustomProfile, Run, Schedule, Suite
from benchmarks.selectors import network_profiles, storage_profiles
from hostlib.digits import is_digits


class RunViewSet(mixins.CreateModelMixin, viewsets.ReadOnlyModelViewSet):
    serializer_class = s.RunSerializer

    def get_queryset(self):
        return by_host(Run.objects.select_related("host", "peer", "operation").defer("operation__log"), self.request)

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


EDITABLE = [
    "name",
    "profiles",
    "target",
    "size",
    "runtime",
    "cache_ok",
    "minute",
    "hour",
    "day_of_week",
    "drop_percent",
    "enabled",
]


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
        serializer.instance = services.schedule_save(
            host=instance.host, user=self.request.user, data={**current, **data}, pk=instance.pk
        )

    def perform_destroy(self, instance):
        services.schedule_delete(
            schedule=instance, user=self.request.user, confirm=self.request.query_params.get("confirm", "")
        )


def _profile(p) -> dict:
    custom = int(p.key.removeprefix("custom-")) if p.key.startswith("custom-") else None
    return {
        "key": p.key,
        "title": p.title,
        "represents": p.represents,
        "jobs": [asdict(j) for j in p.jobs],
        "properties": p.properties,
        "caveat": p.caveat,
        "iperf_streams": p.iperf_streams,
        "custom": custom,
    }


@requires(write=Role.ADMIN)
class ProfileViewSet(viewsets.ViewSet):
    """Profiles: list every one; POST copies one with changed fields (201, admin); DELETE …/<id>/?confirm=<title>
    removes a copy (admin; the id is the copy's `custom` number, its key `custom-<id>` is taken too)."""

    @extend_schema(responses={200: s.ProfileSerializer(many=True)})
    def list(self, request):
        return Response([_profile(p) for p in storage_profiles() + network_profiles()])

    @extend_schema(request=s.ProfileCopyRequest, responses={201: s.ProfileSerializer})
    def create(self, request):
        row = services.profile_copy(user=request.user, **valid(s.ProfileCopyRequest, request).validated_data)
        return Response(_profile(row.as_profile()), status=status.HTTP_201_CREATED)

    @extend_schema(
        request=None,
        responses={204: None},
        parameters=[OpenApiParameter("id", int, OpenApiParameter.PATH, description="The copy's id.")],
    )
    def destroy(self, request, pk=None):
        number = str(pk).removeprefix("custom-")
        if not (is_digits(number) and len(number) <= 18):
            raise NotFound(f"No profile copy {pk}: give a copy's id (its `custom` number); built-in ones stay.")
        row = get_object_or_404(CustomProfile, pk=int(number))
        services.profile_delete(profile=row, user=request.user, confirm=request.query_params.get("confirm", ""))
        return Response(status=status.HTTP_204_NO_CONTENT)
