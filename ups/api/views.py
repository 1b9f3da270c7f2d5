"""UPS API: each host's UPS with its last reading and a day of readings; set one (202 + the Operation that
configures NUT, an admin's), stop watching it."""

from drf_spectacular.utils import extend_schema
from rest_framework import viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from appliance.api.base import ACCEPTED, accepted, by_host, valid
from appliance.api.serializers import ConfirmRequest
from appliance.choices import Role
from ups import services
from ups.api import serializers as s
from ups.models import Ups


class UpsViewSet(viewsets.ReadOnlyModelViewSet):
    """The UPS each NAS watches."""

    serializer_class = s.UpsSerializer
    tarn_write_role = Role.ADMIN

    def get_queryset(self):
        return by_host(Ups.objects.select_related("host"), self.request)

    @extend_schema(request=s.UpsRequest, responses=ACCEPTED)
    def create(self, request):
        """Watch a UPS (or change how): plugged in (driver, port, listen), or served by another NAS (server_host, or
        server and password); the shutdown policy."""
        return accepted(services.ups_save_start(user=request.user, **valid(s.UpsRequest, request).validated_data))

    @extend_schema(request=ConfirmRequest, responses=ACCEPTED)
    def destroy(self, request, pk=None):
        """Stop watching it (confirm: its name): NUT is turned off on the NAS."""
        row = self.get_object()
        d = valid(ConfirmRequest, request).validated_data
        return accepted(services.ups_remove_start(host=row.host, user=request.user, confirm=d["confirm"]))

    @extend_schema(responses=s.ReadingSerializer(many=True))
    @action(detail=True)
    def readings(self, request, pk=None):
        """The last day's readings, one a minute."""
        rows = self.get_object().readings.order_by("-at")[:1440]
        return Response(s.ReadingSerializer(reversed(list(rows)), many=True).data)
