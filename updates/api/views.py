"""Updates API (admins only): a host's pending packages and the guard's verdicts; check; install."""

from django.http import Http404
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from appliance.api.base import ACCEPTED, accepted, valid
from appliance.choices import Role
from appliance.models import Host
from updates import selectors, services
from updates.api.serializers import HostUpdatesSerializer, RebootRequest, RolloutRequest


class _Admin(APIView):
    tarn_read_role = Role.ADMIN
    tarn_write_role = Role.ADMIN


class HostUpdatesView(_Admin):
    """What the host's last check found."""

    @extend_schema(responses=HostUpdatesSerializer)
    def get(self, request, pk):
        row = selectors.host_updates(get_object_or_404(Host, pk=pk))
        if row is None:
            raise Http404("Not checked yet: POST …/check/.")
        return Response(HostUpdatesSerializer(row).data)


class HostUpdatesCheckView(_Admin):
    @extend_schema(request=None, responses=ACCEPTED)
    def post(self, request, pk):
        return accepted(services.updates_check_start(host=get_object_or_404(Host, pk=pk), user=request.user))


class HostUpdatesApplyView(_Admin):
    @extend_schema(request=None, responses=ACCEPTED)
    def post(self, request, pk):
        return accepted(services.updates_apply_start(host=get_object_or_404(Host, pk=pk), user=request.user))


class HostRebootView(_Admin):
    """Reboot once the guard found every kernel in /boot with its module; the operation reports the pools."""

    @extend_schema(request=RebootRequest, responses=ACCEPTED)
    def post(self, request, pk):
        d = valid(RebootRequest, request).validated_data
        host = get_object_or_404(Host, pk=pk)
        return accepted(services.updates_reboot_start(host=host, user=request.user, confirm=d["confirm"]))


class RolloutView(_Admin):
    """Update these hosts one at a time, in the order given; the first is the canary."""

    @extend_schema(request=RolloutRequest, responses=ACCEPTED)
    def post(self, request):
        d = valid(RolloutRequest, request).validated_data
        return accepted(services.updates_rollout_start(user=request.user, hosts=d["hosts"]))
