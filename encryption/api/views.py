"""Encryption API: the encryption roots of a host, a new encrypted dataset, unlock (many, or a dry run) and lock;
every change to a host is 202 + the Operation."""

from drf_spectacular.utils import extend_schema
from rest_framework import viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from appliance.api.base import ACCEPTED, accepted, valid
from encryption import selectors, services
from encryption.api import serializers as s


class EncryptionRootViewSet(viewsets.ViewSet):
    """A host's encryption roots (?host=name): key status, format, location, what each unlocks."""

    @extend_schema(parameters=[s.RootsQuery], responses=s.EncryptionRootSerializer(many=True))
    def list(self, request):
        host = s.RootsQuery(data=request.query_params)
        host.is_valid(raise_exception=True)
        rows = selectors.roots_overview(host=host.validated_data["host"])
        return Response(s.EncryptionRootSerializer(rows, many=True).data)

    @extend_schema(request=s.CreateRequest, responses=ACCEPTED)
    @action(detail=False, methods=["post"], url_path="create")
    def create_dataset(self, request):
        """A new encrypted filesystem or zvol (its own encryption root)."""
        d = valid(s.CreateRequest, request).validated_data
        d["volume_size"] = d["volume_size"] or None
        return accepted(services.encrypted_create_start(user=request.user, **d))

    @extend_schema(request=s.UnlockRequest, responses=ACCEPTED)
    @action(detail=False, methods=["post"])
    def unlock(self, request):
        """Check every key, then load them and mount (or only check: dry_run)."""
        return accepted(services.unlock_start(user=request.user, **valid(s.UnlockRequest, request).validated_data))

    @extend_schema(request=s.LockRequest, responses=ACCEPTED)
    @action(detail=False, methods=["post"])
    def lock(self, request):
        """Unmount and unload the key (refused while in use unless forced)."""
        return accepted(services.lock_start(user=request.user, **valid(s.LockRequest, request).validated_data))
