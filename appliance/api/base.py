"""What every app's API views share: 202 with the operation to follow, a request's data checked by a serializer
(a 400 naming the field), and ?host= to narrow a list."""

from rest_framework import status
from rest_framework.response import Response

from appliance.api.serializers import OperationSerializer

ACCEPTED = {202: OperationSerializer}


def by_host(qs, request, field="host__name"):
    """?host=name narrows a list to one host."""
    host = request.query_params.get("host")
    return qs.filter(**{field: host}) if host else qs


def accepted(op):
    """202 with the Operation to follow."""
    return Response(OperationSerializer(op).data, status=status.HTTP_202_ACCEPTED)


def valid(serializer_class, request):
    data = serializer_class(data=request.data)
    data.is_valid(raise_exception=True)
    return data
