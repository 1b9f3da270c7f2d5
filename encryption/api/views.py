"""Encryption API: the encryption roots of a host, a new encrypted dataset, unlock (many, or a dry run) and lock;
every change to a host is 202 + the Operation. A key export and its download need a fresh second factor
(appliance.auth.fresh: a token is one; a session confirms first)."""

import base64

from django.core.exceptions import ValidationError
from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from appliance.api.base import ACCEPTED, accepted, by_host, valid
from appliance.api.serializers import ConfirmRequest
from appliance.auth.fresh import fresh_factor
from appliance.choices import Role
from encryption import selectors, services
from encryption.api import serializers as s
from encryption.models import KeyExport


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
        d = valid(s.UnlockRequest, request).validated_data
        blob, passphrase = d.pop("key_export"), d.pop("key_export_passphrase")
        if blob:
            try:
                data = base64.b64decode(blob, validate=True)
            except ValueError:
                raise ValidationError({"key_export": "Not base64."}) from None
            d["keys"] = services.keys_from_export(data=data, passphrase=passphrase, field="key_export")
        return accepted(services.unlock_start(user=request.user, **d))

    @extend_schema(request=s.LockRequest, responses=ACCEPTED)
    @action(detail=False, methods=["post"])
    def lock(self, request):
        """Unmount and unload the key (refused while in use unless forced)."""
        return accepted(services.lock_start(user=request.user, **valid(s.LockRequest, request).validated_data))

    @extend_schema(request=s.ChangeKeyRequest, responses=ACCEPTED)
    @action(detail=False, methods=["post"], url_path="change-key")
    def change_key(self, request):
        """A new passphrase or key for an unlocked root (the current one checked first), or inherit the parent's."""
        return accepted(
            services.change_key_start(user=request.user, **valid(s.ChangeKeyRequest, request).validated_data)
        )

    @extend_schema(request=s.ExportRequest, responses=ACCEPTED)
    @action(detail=False, methods=["post"])
    @fresh_factor
    def export(self, request):
        """Export keys into one passphrase-encrypted file (admin; the dataset's or host's name typed as confirm)."""
        return accepted(services.keys_export_start(user=request.user, **valid(s.ExportRequest, request).validated_data))

    def get_required_role(self, request):
        """Exports and changes of key are an admin's (a change of key can put a root out of Tarn's reach)."""
        return Role.ADMIN if self.action in ("export", "change_key") else None


class KeyExportViewSet(viewsets.ReadOnlyModelViewSet):
    """Key exports made and not yet downloaded (admin). POST …/download/ hands the file over once."""

    serializer_class = s.KeyExportSerializer
    tarn_read_role = Role.ADMIN
    tarn_write_role = Role.ADMIN

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):  # the schema: no one's exports
            return KeyExport.objects.none()
        return by_host(selectors.exports_all(user=self.request.user), self.request)

    @extend_schema(request=None, responses={(200, "application/octet-stream"): OpenApiTypes.BINARY})
    @action(detail=True, methods=["post"])
    @fresh_factor
    def download(self, request, pk=None):
        name, data = services.key_export_take(export=self.get_object())
        response = HttpResponse(data, content_type="application/octet-stream")
        response["Content-Disposition"] = f'attachment; filename="{name}"'
        return response


class RetiredKeyViewSet(viewsets.ReadOnlyModelViewSet):
    """Old keys changes of key left (admin), kept until removed: POST …/remove/ with the dataset's name as confirm
    removes the sealed copy and the key file on the NAS (202 + the Operation)."""

    serializer_class = s.RetiredKeySerializer
    tarn_read_role = Role.ADMIN
    tarn_write_role = Role.ADMIN

    def get_queryset(self):
        return by_host(selectors.retired_keys_all(), self.request)

    @extend_schema(request=ConfirmRequest, responses=ACCEPTED)
    @action(detail=True, methods=["post"])
    def remove(self, request, pk=None):
        confirm = valid(ConfirmRequest, request).validated_data["confirm"]
        return accepted(services.retired_key_remove_start(user=request.user, key=self.get_object(), confirm=confirm))
