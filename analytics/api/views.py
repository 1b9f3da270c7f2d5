"""Analytics and alert API: the analytics charts as data, alerts (?open=1), channels (admin; secrets write-only;
…/<id>/test/ sends one now), rules (admin writes)."""

from django.http import HttpResponse
from drf_spectacular.utils import OpenApiParameter, extend_schema
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response
from rest_framework.views import APIView

from analytics import selectors, services
from analytics.api import serializers as s
from analytics.forms import AnalyticsQuery
from analytics.metrics import InventoryCollector
from analytics.models import Alert, Channel
from appliance.auth import requires
from appliance.choices import Role
from appliance.models import Host


class AlertViewSet(viewsets.ReadOnlyModelViewSet):
    serializer_class = s.AlertSerializer

    @extend_schema(parameters=[OpenApiParameter("open", bool, description="Only the open ones.")])
    def list(self, request, *args, **kwargs):
        return super().list(request, *args, **kwargs)

    def get_queryset(self):
        qs = Alert.objects.select_related("host")
        return qs.filter(cleared_at__isnull=True) if self.request.query_params.get("open") else qs


@requires(write=Role.ADMIN, read=Role.ADMIN)
class ChannelViewSet(viewsets.ModelViewSet):
    serializer_class = s.ChannelSerializer
    queryset = Channel.objects.all()

    def perform_create(self, serializer):
        serializer.instance = services.channel_save(data=dict(serializer.validated_data))

    def perform_update(self, serializer):
        serializer.instance = services.channel_save(data=dict(serializer.validated_data), pk=serializer.instance.pk)

    @extend_schema(parameters=[OpenApiParameter("confirm", str, description="The channel's name, typed again.")])
    def destroy(self, request, *args, **kwargs):
        services.channel_delete(channel=self.get_object(), confirm=request.query_params.get("confirm", ""))
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(
        request=None,
        responses={200: {"type": "object", "properties": {"ok": {"type": "boolean"}, "result": {"type": "string"}}}},
    )
    @action(detail=True, methods=["post"])
    def test(self, request, pk=None):
        ok, result = services.channel_test(channel=self.get_object())
        return Response({"ok": ok, "result": result})


@requires(write=Role.ADMIN)
class RuleViewSet(mixins.ListModelMixin, viewsets.GenericViewSet):
    """The rules as in effect; PUT …/<key>/ changes one."""

    serializer_class = s.RuleSerializer
    lookup_value_regex = "[a-z_]+"

    def get_queryset(self):
        return [{**r.__dict__, "enabled": on} for r, on in selectors.rules().values()]

    @extend_schema(
        request=s.RuleSerializer,
        responses={200: s.RuleSerializer},
        parameters=[OpenApiParameter("id", str, OpenApiParameter.PATH, description="The rule's key.")],
    )
    def update(self, request, pk=None):
        data = s.RuleSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        services.rule_save(key=pk, **data.validated_data)
        rule, on = selectors.rules()[pk]
        return Response(s.RuleSerializer({**rule.__dict__, "enabled": on}).data)


class MetricsView(APIView):
    """Prometheus exposition (text format 0.0.4) of the inventory, for Prometheus and Grafana: scrape with an API
    token (`Authorization: Bearer tarn_…`)."""

    @extend_schema(responses={(200, "text/plain"): str})
    def get(self, request):
        registry = CollectorRegistry(auto_describe=False)
        registry.register(InventoryCollector())
        return HttpResponse(generate_latest(registry), content_type=CONTENT_TYPE_LATEST)


class AnalyticsView(APIView):
    """The analytics page's charts as data: ?host=<name> (default: the first), ?range=15m|1h|6h|24h|7d|30d,
    ?chart=<key>&by=<breakdown> for one chart broken down."""

    @extend_schema(
        parameters=[
            OpenApiParameter(p, str, description=d)
            for p, d in (
                ("host", "The host's name (default: the first)."),
                ("range", "15m, 1h (default), 6h, 24h, 7d or 30d."),
                ("chart", "One chart: pool_bw, pool_ops, pool_lat, arc, link, smb, nfs, cpu."),
                ("by", "Its breakdown: pool, vdev, dataset, link, smb_client, smb_share, smb_user, nfs_client…"),
            )
        ],
        responses={200: dict},
    )
    def get(self, request):
        query = AnalyticsQuery(request.query_params)
        host = (
            Host.objects.filter(name=request.query_params.get("host")).first()
            if "host" in request.query_params
            else Host.objects.order_by("pk").first()
        )
        if not query.is_valid() or host is None:
            errors = dict(query.errors) if not query.is_valid() else {"host": ["No such host."]}
            return Response(errors, status=status.HTTP_400_BAD_REQUEST)
        q = query.cleaned_data
        data = selectors.analytics(host, q["range"], q["chart"], q["by"])
        charts = [{"key": c["chart"].key, "title": c["chart"].title, **c["spec"]} for c in data["charts"]]
        return Response(
            {
                "host": host.name,
                "range": q["range"].key,
                "points": data["points"],
                "charts": charts,
                "markers": [{**m, "at": m["at"].isoformat()} for m in data["markers"]],
                "sample_cost": data["cost"],
            }
        )


class SamplerSettingView(APIView):
    """The sampler's settings (GET; PUT: admin)."""

    def get_required_role(self, request):
        return Role.ADMIN if request.method not in ("GET", "HEAD", "OPTIONS") else None

    @extend_schema(responses={200: s.SamplerSettingSerializer})
    def get(self, request):
        return Response(s.SamplerSettingSerializer(selectors.sampler_initial()).data)

    @extend_schema(request=s.SamplerSettingSerializer, responses={200: s.SamplerSettingSerializer})
    def put(self, request):
        data = s.SamplerSettingSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        services.sampler_setting_save(**data.validated_data)
        return Response(s.SamplerSettingSerializer(selectors.sampler_initial()).data)
