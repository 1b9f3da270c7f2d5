"""API views: parse, call one service or selector, return."""

from drf_spectacular.utils import extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.pagination import CursorPagination, PageNumberPagination
from rest_framework.response import Response

from appliance import selectors, services
from appliance.api.serializers import (
    AuditEntrySerializer,
    ConfirmRequest,
    FleetRowSerializer,
    HostCreateSerializer,
    HostSerializer,
    OperationSerializer,
)
from appliance.choices import Role
from appliance.fleet import fleet_view
from appliance.models import Host, Operation


class HostViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.CreateModelMixin, viewsets.GenericViewSet):
    """Hosts Tarn manages. Adding one (admin) pins its SSH host key and probes it; removing one (admin, its name
    typed as `confirm`) forgets Tarn's rows for it and changes nothing on the host."""

    queryset = Host.objects.all()
    serializer_class = HostSerializer

    def get_required_role(self, request):
        return Role.ADMIN if self.action in ("create", "destroy") else None

    @extend_schema(request=ConfirmRequest, responses={204: None})
    def destroy(self, request, pk=None):
        confirm = request.data.get("confirm") or request.query_params.get("confirm", "")
        services.host_remove(host=self.get_object(), confirm=str(confirm), user=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(request=HostCreateSerializer, responses={201: HostSerializer})
    def create(self, request):
        data = HostCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        host = services.host_create(**data.validated_data, user=request.user)
        return Response(HostSerializer(host).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=None, responses={202: OperationSerializer})
    @action(detail=True, methods=["post"])
    def probe(self, request, pk=None):
        op = services.host_probe_start(host=self.get_object(), user=request.user)
        return Response(OperationSerializer(op).data, status=status.HTTP_202_ACCEPTED)


class NewestFirst(CursorPagination):
    """Keyset pages by id, newest first: no COUNT and no OFFSET over a million rows (?cursor= from next)."""

    ordering = "-id"
    page_size = 50
    page_size_query_param = "limit"
    max_page_size = 500


class OperationViewSet(viewsets.ReadOnlyModelViewSet):
    """Operations: every change Tarn makes, with status and progress."""

    queryset = Operation.objects.select_related("host", "user")
    serializer_class = OperationSerializer
    pagination_class = NewestFirst

    def get_queryset(self):
        qs = super().get_queryset()
        status_ = self.request.query_params.get("status")
        return qs.filter(status=status_) if status_ else qs


class AuditEntryViewSet(viewsets.ReadOnlyModelViewSet):
    """The audit log (read-only: nothing can delete entries). Filters: kind, user, host, q (last 7 days unless
    since/until are given)."""

    serializer_class = AuditEntrySerializer
    pagination_class = NewestFirst

    def get_queryset(self):
        p = self.request.query_params
        return selectors.audit_filter(
            kind=p.get("kind", ""), user=p.get("user", ""), host=p.get("host", ""), q=p.get("q", "")
        )


class FleetPages(PageNumberPagination):
    page_size = 50


class FleetViewSet(viewsets.ViewSet):
    """Every host at a glance, as the fleet page shows it: a row per host, a cell per column ({text, level}: level
    ok, warn, bad or empty). Filters: q (in the name), order (a column's key, or `name`; a leading '-' reverses),
    attention=1 (only hosts with a warn or bad cell); 50 a page."""

    @extend_schema(responses=FleetRowSerializer(many=True))
    def list(self, request):
        p = request.query_params
        columns, rows = fleet_view(hosts=selectors.host_list(), user=request.user, q=p.get("q", ""),
                                   order=p.get("order", ""), attention=p.get("attention") == "1")  # fmt: skip
        pages = FleetPages()
        page = pages.paginate_queryset(rows, request, view=self)
        return pages.get_paginated_response(FleetRowSerializer(page, many=True, context={"columns": columns}).data)
