"""Benchmark API: runs (filter: ?host=name); POST starts one (202, the run to follow), …/cancel/ stops it."""

from drf_spectacular.utils import extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from appliance.api.views import by_host, valid
from benchmarks import services
from benchmarks.api import serializers as s
from benchmarks.models import Run


class RunViewSet(mixins.CreateModelMixin, viewsets.ReadOnlyModelViewSet):
    serializer_class = s.RunSerializer

    def get_queryset(self):
        return by_host(Run.objects.select_related("host"), self.request)

    @extend_schema(request=s.RunRequest, responses={202: s.RunSerializer})
    def create(self, request):
        run = services.benchmark_start(user=request.user, **valid(s.RunRequest, request).validated_data)
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
        """Run again exactly what this run ran (its manifest's jobs, on its target)."""
        run = services.benchmark_again(run=self.get_object(), user=request.user)
        return Response(s.RunSerializer(run).data, status=status.HTTP_202_ACCEPTED)
