"""Capacity API: the forecasts as last made (?host=, ?pool=, ?kind=pools|datasets, ?q=), one's recorded series, and
"forecast now" for a host (from Tarn's inventory; nothing is asked of the host)."""

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from appliance.api.base import by_host, valid
from appliance.api.serializers import HostRequest
from capacity import selectors, services
from capacity.api import serializers as s


class ForecastViewSet(viewsets.ReadOnlyModelViewSet):
    """Every pool's and dataset's forecast, those full soonest first."""

    serializer_class = s.ForecastSerializer

    @extend_schema(
        parameters=[
            OpenApiParameter("host", str, description="A host's name."),
            OpenApiParameter("pool", str, description="One pool (and its datasets)."),
            OpenApiParameter("kind", str, enum=["pools", "datasets"]),
            OpenApiParameter("q", str, description="Part of a dataset's or pool's name."),
        ]
    )
    def list(self, request, *args, **kwargs):
        return super().list(request, *args, **kwargs)

    def get_queryset(self):
        params = self.request.query_params
        rows = selectors.forecasts(pool=params.get("pool", "")[:255], q=params.get("q", "")[:255],
                                   kind=params.get("kind", ""))  # fmt: skip
        return by_host(rows, self.request)

    @extend_schema(parameters=[s.SeriesQuery], responses=s.PointSerializer(many=True))
    @action(detail=True)
    def series(self, request, pk=None):
        """The recorded points (at, used, total) of the last ?days= (1–90, 30 by default), oldest first."""
        row = self.get_object()
        query = s.SeriesQuery(data=request.query_params)
        query.is_valid(raise_exception=True)
        points = selectors.series(host=row.host, pool=row.pool, dataset=row.dataset, days=query.validated_data["days"])
        return Response(s.PointSerializer([{"at": a, "used": u, "total": t} for a, u, t in points], many=True).data)

    @extend_schema(request=HostRequest, responses=s.ForecastSerializer(many=True))
    @action(detail=False, methods=["post"])
    def refresh(self, request):
        """Record a point from the host's inventory and make its forecasts again now."""
        made = services.capacity_update(**valid(HostRequest, request).validated_data)
        return Response(s.ForecastSerializer(made, many=True).data)
