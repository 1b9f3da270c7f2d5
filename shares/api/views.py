"""Share API: SMB shares, NFS exports, server settings and Samba users; every change is 202 + the Operation."""

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from appliance.api.base import ACCEPTED, accepted, by_host, valid
from appliance.api.serializers import ConfirmRequest
from appliance.choices import Role
from appliance.models import Host
from shares import selectors, services
from shares.api import serializers as s
from shares.models import NfsExport, SambaUser, ShareSettings, ShareStatus, SmbShare


class _SavedAndAppliedViewSet(viewsets.ReadOnlyModelViewSet):
    """A share-like row: create and partial_update go through the service that checks, saves and applies."""

    model = create_request = save = None

    def get_queryset(self):
        return by_host(self.model.objects.select_related("host"), self.request)

    def paginate_queryset(self, queryset):
        """A page of rows, each marked offered or off from its dataset (one query per host on the page)."""
        page = super().paginate_queryset(queryset)
        return selectors.shares_with_state(list(page)) if page is not None else None

    def retrieve(self, request, pk=None):
        return Response(self.get_serializer(selectors.shares_with_state([self.get_object()])[0]).data)

    def service_args(self, serializer) -> dict:
        """What the service takes besides the row's fields (NFS: the confirmed risks)."""
        return {}

    def create(self, request):
        serializer = valid(self.create_request, request)
        extra = self.service_args(serializer)
        host = serializer.validated_data.pop("host")
        return accepted(self.save(host=host, user=request.user, data=serializer.validated_data, **extra))

    def partial_update(self, request, pk=None):
        row = self.get_object()
        serializer = self.serializer_class(row, data=request.data, partial=True)
        serializer.is_valid(raise_exception=True)
        extra = self.service_args(serializer)
        return accepted(self.save(host=row.host, user=request.user, data=serializer.validated_data, pk=row.pk, **extra))


@extend_schema_view(
    create=extend_schema(request=s.SmbShareCreateRequest, responses=ACCEPTED),
    partial_update=extend_schema(request=s.SmbShareSerializer, responses=ACCEPTED),
)
class SmbShareViewSet(_SavedAndAppliedViewSet):
    """SMB shares (filter: ?host=name). Every change renders, validates (testparm) and applies the config."""

    model, serializer_class, create_request = SmbShare, s.SmbShareSerializer, s.SmbShareCreateRequest
    save = staticmethod(services.smb_share_save_start)

    def get_required_role(self, request):
        return Role.ADMIN if self.action == "folder" else None

    @extend_schema(request=s.ShareFolderRequest, responses=ACCEPTED)
    @action(detail=True, methods=["post"])
    def folder(self, request, pk=None):
        """Owner (root or a Samba user), group and mode of the share's root folder."""
        share = self.get_object()
        d = valid(s.ShareFolderRequest, request).validated_data
        return accepted(services.smb_share_folder_start(host=share.host, user=request.user, pk=share.pk, **d))

    @extend_schema(request=ConfirmRequest, responses=ACCEPTED)
    def destroy(self, request, pk=None):
        share = self.get_object()
        confirm = valid(ConfirmRequest, request).validated_data["confirm"]
        return accepted(
            services.smb_share_delete_start(host=share.host, user=request.user, pk=share.pk, confirm=confirm)
        )


@extend_schema_view(
    create=extend_schema(request=s.NfsExportCreateRequest, responses=ACCEPTED),
    partial_update=extend_schema(request=s.NfsExportSerializer, responses=ACCEPTED),
)
class NfsExportViewSet(_SavedAndAppliedViewSet):
    """NFS exports (filter: ?host=name). A client matching every host needs wildcard_ok, client root acting as
    root (no_root_squash, anonuid/anongid 0) needs root_ok and an admin, async writes need async_ok."""

    model, serializer_class, create_request = NfsExport, s.NfsExportSerializer, s.NfsExportCreateRequest
    save = staticmethod(services.nfs_export_save_start)

    def service_args(self, serializer) -> dict:
        return {"confirmed": serializer.confirmed()}

    @extend_schema(request=ConfirmRequest, responses=ACCEPTED)
    def destroy(self, request, pk=None):
        export = self.get_object()
        confirm = valid(ConfirmRequest, request).validated_data["confirm"]
        return accepted(
            services.nfs_export_delete_start(host=export.host, user=request.user, pk=export.pk, confirm=confirm)
        )


class ShareSettingsViewSet(viewsets.GenericViewSet):
    """Server-wide SMB and NFS settings, one set per host (GET/PATCH /share-settings/<host>/)."""

    serializer_class = s.ShareSettingsSerializer
    lookup_field = "host__name"
    lookup_url_kwarg = "host"

    def get_required_role(self, request):
        return Role.ADMIN if request.method not in ("GET", "HEAD", "OPTIONS") else None

    def get_queryset(self):
        return ShareSettings.objects.select_related("host")

    def _host(self):
        return get_object_or_404(Host, name=self.kwargs["host"])

    def retrieve(self, request, host=None):
        return Response(s.ShareSettingsSerializer(selectors.share_settings(host=self._host())).data)

    @extend_schema(request=s.ShareSettingsSerializer, responses=ACCEPTED)
    def partial_update(self, request, host=None):
        target = self._host()
        data = s.ShareSettingsSerializer(selectors.share_settings(host=target), data=request.data, partial=True)
        data.is_valid(raise_exception=True)
        return accepted(services.share_settings_save_start(host=target, user=request.user, data=data.validated_data))


class SambaUserViewSet(viewsets.ReadOnlyModelViewSet):
    """Samba users (filter: ?host=name). Passwords go to Samba only: never stored, logged or returned."""

    serializer_class = s.SambaUserSerializer

    def get_required_role(self, request):
        return Role.ADMIN if request.method not in ("GET", "HEAD", "OPTIONS") else None

    def get_queryset(self):
        return by_host(SambaUser.objects.select_related("host"), self.request)

    @extend_schema(request=s.SambaUserCreateRequest, responses=ACCEPTED)
    def create(self, request):
        d = valid(s.SambaUserCreateRequest, request).validated_data
        return accepted(services.samba_user_start(user=request.user, action="add", **d))

    @extend_schema(request=s.PasswordRequest, responses=ACCEPTED)
    @action(detail=True, methods=["post"])
    def password(self, request, pk=None):
        row = self.get_object()
        password = valid(s.PasswordRequest, request).validated_data["password"]
        return accepted(
            services.samba_user_start(
                host=row.host, user=request.user, action="password", username=row.username, password=password
            )
        )

    @extend_schema(request=None, responses=ACCEPTED)
    @action(detail=True, methods=["post"])
    def enable(self, request, pk=None):
        row = self.get_object()
        return accepted(
            services.samba_user_start(host=row.host, user=request.user, action="enable", username=row.username)
        )

    @extend_schema(request=None, responses=ACCEPTED)
    @action(detail=True, methods=["post"])
    def disable(self, request, pk=None):
        row = self.get_object()
        return accepted(
            services.samba_user_start(host=row.host, user=request.user, action="disable", username=row.username)
        )

    @extend_schema(request=ConfirmRequest, responses=ACCEPTED)
    def destroy(self, request, pk=None):
        row = self.get_object()
        confirm = valid(ConfirmRequest, request).validated_data["confirm"]
        return accepted(
            services.samba_user_start(
                host=row.host, user=request.user, action="delete", username=row.username, confirm=confirm
            )
        )


class ShareStatusViewSet(viewsets.GenericViewSet):
    """Who is connected to a host's shares, as last read (GET /share-status/<host>/); POST …/refresh/ reads
    smbstatus and nfsd's clients again (an operation)."""

    serializer_class = s.ShareStatusSerializer
    lookup_field = "host__name"
    lookup_url_kwarg = "host"

    def get_queryset(self):
        return ShareStatus.objects.select_related("host")

    def retrieve(self, request, host=None):
        row = selectors.share_overview(host=get_object_or_404(Host, name=host))["status"]
        return Response(s.ShareStatusSerializer(row).data if row else {})

    @extend_schema(request=None, responses=ACCEPTED)
    @action(detail=True, methods=["post"])
    def refresh(self, request, host=None):
        return accepted(services.share_status_start(host=get_object_or_404(Host, name=host), user=request.user))
