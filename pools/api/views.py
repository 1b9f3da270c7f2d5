"""Storage API: the inventory (read) and every storage change (202 + the Operation to follow).

Requests are checked for shape here and for rules by the same services the pages call.
"""

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from appliance.api.serializers import OperationSerializer
from appliance.choices import Role
from appliance.models import Host
from pools import services
from pools.api import serializers as s
from pools.models import Dataset, Disk, NfsExport, Pool, SambaUser, ShareSettings, SmbShare, Snapshot

ACCEPTED = {202: OperationSerializer}


def _by_host(qs, request, field="host__name"):
    host = request.query_params.get("host")
    return qs.filter(**{field: host}) if host else qs


def _accepted(op):
    return Response(OperationSerializer(op).data, status=status.HTTP_202_ACCEPTED)


def _valid(serializer_class, request):
    data = serializer_class(data=request.data)
    data.is_valid(raise_exception=True)
    return data


class PoolViewSet(viewsets.ReadOnlyModelViewSet):
    """Pools from the inventory (filter: ?host=name), and pool operations."""

    ADMIN_ACTIONS = {"create", "destroy", "device", "add", "export", "import_pool"}

    def get_required_role(self, request):
        return Role.ADMIN if self.action in self.ADMIN_ACTIONS else None

    def get_queryset(self):
        return _by_host(Pool.objects.select_related("host"), self.request)

    def get_serializer_class(self):
        return s.PoolDetailSerializer if self.action == "retrieve" else s.PoolSerializer

    @extend_schema(request=s.PoolCreateRequest, responses=ACCEPTED)
    def create(self, request):
        data = _valid(s.PoolCreateRequest, request)
        d = data.validated_data
        return _accepted(
            services.pool_create_start(
                host=d["host"],
                user=request.user,
                name=d["name"],
                layout=data.layout(),
                pool_props=d["pool_properties"],
                root_props=d["root_properties"],
            )
        )

    @extend_schema(request=s.ConfirmRequest, responses=ACCEPTED)
    def destroy(self, request, pk=None):
        pool = self.get_object()
        confirm = _valid(s.ConfirmRequest, request).validated_data["confirm"]
        return _accepted(
            services.pool_destroy_start(host=pool.host, user=request.user, name=pool.name, confirm=confirm)
        )

    @extend_schema(request=s.ActionRequest, responses=ACCEPTED)
    @action(detail=True, methods=["post"])
    def scrub(self, request, pk=None):
        pool = self.get_object()
        act = _valid(s.ActionRequest, request).validated_data["action"]
        return _accepted(services.pool_scrub_start(host=pool.host, user=request.user, pool=pool.name, action=act))

    @extend_schema(request=s.ActionRequest, responses=ACCEPTED)
    @action(detail=True, methods=["post"])
    def trim(self, request, pk=None):
        pool = self.get_object()
        act = _valid(s.ActionRequest, request).validated_data["action"]
        return _accepted(services.pool_trim_start(host=pool.host, user=request.user, pool=pool.name, action=act))

    @extend_schema(request=s.DeviceRequest, responses=ACCEPTED)
    @action(detail=True, methods=["post"])
    def device(self, request, pk=None):
        """offline, online, clear, replace, attach or detach a disk."""
        pool = self.get_object()
        d = _valid(s.DeviceRequest, request).validated_data
        return _accepted(services.pool_device_start(host=pool.host, user=request.user, pool=pool.name, **d))

    @extend_schema(request=s.LayoutRequest, responses=ACCEPTED)
    @action(detail=True, methods=["post"])
    def add(self, request, pk=None):
        pool = self.get_object()
        layout = _valid(s.LayoutRequest, request).layout()
        return _accepted(services.pool_add_start(host=pool.host, user=request.user, pool=pool.name, layout=layout))

    @extend_schema(request=None, responses=ACCEPTED)
    @action(detail=True, methods=["post"])
    def export(self, request, pk=None):
        pool = self.get_object()
        return _accepted(services.pool_export_start(host=pool.host, user=request.user, name=pool.name))

    @extend_schema(request=s.HostRequest, responses=ACCEPTED)
    @action(detail=False, methods=["post"])
    def refresh(self, request):
        """Read the host's pools, disks, datasets and snapshots again."""
        host = _valid(s.HostRequest, request).validated_data["host"]
        return _accepted(services.inventory_refresh_start(host=host, user=request.user))

    @extend_schema(request=s.HostRequest, responses=ACCEPTED)
    @action(detail=False, methods=["post"], url_path="import-scan")
    def import_scan(self, request):
        host = _valid(s.HostRequest, request).validated_data["host"]
        return _accepted(services.pool_import_scan_start(host=host, user=request.user))

    @extend_schema(request=s.ImportRequest, responses=ACCEPTED)
    @action(detail=False, methods=["post"], url_path="import")
    def import_pool(self, request):
        d = _valid(s.ImportRequest, request).validated_data
        return _accepted(services.pool_import_start(user=request.user, **d))


class DiskViewSet(viewsets.ReadOnlyModelViewSet):
    """Block devices and what they are used for. Filter: ?host=name."""

    serializer_class = s.DiskSerializer

    def get_queryset(self):
        return _by_host(Disk.objects.select_related("host", "pool"), self.request)


class DatasetViewSet(viewsets.ReadOnlyModelViewSet):
    """Filesystems and zvols with each property's value and source (filter: ?host=name&pool=name), and changes."""

    serializer_class = s.DatasetSerializer

    def get_queryset(self):
        qs = _by_host(Dataset.objects.select_related("host"), self.request)
        pool = self.request.query_params.get("pool")
        return qs.filter(pool__name=pool) if pool else qs

    @extend_schema(request=s.DatasetCreateRequest, responses=ACCEPTED)
    def create(self, request):
        d = _valid(s.DatasetCreateRequest, request).validated_data
        return _accepted(
            services.dataset_create_start(
                host=d["host"], user=request.user, name=d["name"], props=d["properties"], volume_size=d["volsize"]
            )
        )

    @extend_schema(request=s.PropertiesRequest, responses=ACCEPTED)
    def partial_update(self, request, pk=None):
        """Set properties (only those given change)."""
        ds = self.get_object()
        props = _valid(s.PropertiesRequest, request).validated_data["properties"]
        return _accepted(services.dataset_set_start(host=ds.host, user=request.user, name=ds.name, props=props))

    @extend_schema(request=s.InheritRequest, responses=ACCEPTED)
    @action(detail=True, methods=["post"])
    def inherit(self, request, pk=None):
        ds = self.get_object()
        key = _valid(s.InheritRequest, request).validated_data["property"]
        return _accepted(services.dataset_inherit_start(host=ds.host, user=request.user, name=ds.name, key=key))

    @extend_schema(request=s.RenameRequest, responses=ACCEPTED)
    @action(detail=True, methods=["post"])
    def rename(self, request, pk=None):
        ds = self.get_object()
        new = _valid(s.RenameRequest, request).validated_data["new_name"]
        return _accepted(services.dataset_rename_start(host=ds.host, user=request.user, name=ds.name, new_name=new))

    @extend_schema(request=s.ConfirmRequest, responses=ACCEPTED)
    def destroy(self, request, pk=None):
        ds = self.get_object()
        confirm = _valid(s.ConfirmRequest, request).validated_data["confirm"]
        return _accepted(services.dataset_destroy_start(host=ds.host, user=request.user, name=ds.name, confirm=confirm))


class SnapshotViewSet(viewsets.ReadOnlyModelViewSet):
    """Snapshots, newest first, paginated (filters: ?host=name&dataset=name&q=text), and snapshot operations."""

    serializer_class = s.SnapshotSerializer

    def get_queryset(self):
        qs = Snapshot.objects.select_related("dataset", "dataset__host")
        params = self.request.query_params
        if params.get("dataset"):  # ids first (they imply the host), so the (dataset, created_at) index serves
            ids = _by_host(Dataset.objects.filter(name=params["dataset"]), self.request).values_list("id", flat=True)
            qs = qs.filter(dataset_id__in=list(ids))
        else:
            qs = _by_host(qs, self.request)
        if params.get("q"):
            qs = qs.filter(name__icontains=params["q"])
        return qs.order_by("-created_at", "-pk")

    @extend_schema(request=s.SnapshotCreateRequest, responses=ACCEPTED)
    def create(self, request):
        d = _valid(s.SnapshotCreateRequest, request).validated_data
        return _accepted(services.snapshot_create_start(user=request.user, **d))

    @extend_schema(request=s.RollbackRequest, responses=ACCEPTED)
    @action(detail=True, methods=["post"])
    def rollback(self, request, pk=None):
        snap = self.get_object()
        newer = _valid(s.RollbackRequest, request).validated_data["destroy_newer"]
        return _accepted(
            services.snapshot_rollback_start(
                host=snap.dataset.host, user=request.user, snapshot=snap.full_name, destroy_newer=newer
            )
        )

    @extend_schema(request=s.CloneRequest, responses=ACCEPTED)
    @action(detail=True, methods=["post"])
    def clone(self, request, pk=None):
        snap = self.get_object()
        target = _valid(s.CloneRequest, request).validated_data["target"]
        return _accepted(
            services.snapshot_clone_start(
                host=snap.dataset.host, user=request.user, snapshot=snap.full_name, target=target
            )
        )

    @extend_schema(request=s.HoldRequest, responses=ACCEPTED)
    @action(detail=True, methods=["post"])
    def hold(self, request, pk=None):
        return self._hold(request, release=False)

    @extend_schema(request=s.HoldRequest, responses=ACCEPTED)
    @action(detail=True, methods=["post"])
    def release(self, request, pk=None):
        return self._hold(request, release=True)

    def _hold(self, request, *, release):
        snap = self.get_object()
        tag = _valid(s.HoldRequest, request).validated_data["tag"]
        return _accepted(
            services.snapshot_hold_start(
                host=snap.dataset.host, user=request.user, snapshot=snap.full_name, tag=tag, release=release
            )
        )

    @extend_schema(request=None, responses=ACCEPTED)
    def destroy(self, request, pk=None):
        snap = self.get_object()
        return _accepted(
            services.snapshot_destroy_start(host=snap.dataset.host, user=request.user, snapshots=[snap.full_name])
        )

    @extend_schema(request=s.SnapshotDestroyRequest, responses=ACCEPTED)
    @action(detail=False, methods=["post"], url_path="destroy")
    def destroy_many(self, request):
        """Destroy many snapshots in one operation (with progress)."""
        d = _valid(s.SnapshotDestroyRequest, request).validated_data
        return _accepted(services.snapshot_destroy_start(user=request.user, **d))


# --- shares ----------------------------------------------------------------------------------------------
class _SavedAndAppliedViewSet(viewsets.ReadOnlyModelViewSet):
    """A share-like row: create and partial_update go through the service that checks, saves and applies."""

    model = create_request = save = None

    def get_queryset(self):
        return _by_host(self.model.objects.select_related("host"), self.request)

    def create(self, request):
        d = _valid(self.create_request, request).validated_data
        host = d.pop("host")
        return _accepted(self.save(host=host, user=request.user, data=d))

    def partial_update(self, request, pk=None):
        row = self.get_object()
        data = self.serializer_class(row, data=request.data, partial=True)
        data.is_valid(raise_exception=True)
        return _accepted(self.save(host=row.host, user=request.user, data=data.validated_data, pk=row.pk))


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
        d = _valid(s.ShareFolderRequest, request).validated_data
        return _accepted(services.smb_share_folder_start(host=share.host, user=request.user, pk=share.pk, **d))

    @extend_schema(request=s.ConfirmRequest, responses=ACCEPTED)
    def destroy(self, request, pk=None):
        share = self.get_object()
        confirm = _valid(s.ConfirmRequest, request).validated_data["confirm"]
        return _accepted(
            services.smb_share_delete_start(host=share.host, user=request.user, pk=share.pk, confirm=confirm)
        )


@extend_schema_view(
    create=extend_schema(request=s.NfsExportCreateRequest, responses=ACCEPTED),
    partial_update=extend_schema(request=s.NfsExportSerializer, responses=ACCEPTED),
)
class NfsExportViewSet(_SavedAndAppliedViewSet):
    """NFS exports (filter: ?host=name). `*` as a client needs wildcard_ok, async writes need async_ok."""

    model, serializer_class, create_request = NfsExport, s.NfsExportSerializer, s.NfsExportCreateRequest
    save = staticmethod(services.nfs_export_save_start)

    @extend_schema(request=None, responses=ACCEPTED)
    def destroy(self, request, pk=None):
        export = self.get_object()
        return _accepted(services.nfs_export_delete_start(host=export.host, user=request.user, pk=export.pk))


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
        return Response(s.ShareSettingsSerializer(services.share_settings(self._host())).data)

    @extend_schema(request=s.ShareSettingsSerializer, responses=ACCEPTED)
    def partial_update(self, request, host=None):
        target = self._host()
        data = s.ShareSettingsSerializer(services.share_settings(target), data=request.data, partial=True)
        data.is_valid(raise_exception=True)
        return _accepted(services.share_settings_save_start(host=target, user=request.user, data=data.validated_data))


class SambaUserViewSet(viewsets.ReadOnlyModelViewSet):
    """Samba users (filter: ?host=name). Passwords go to Samba only: never stored, logged or returned."""

    serializer_class = s.SambaUserSerializer

    def get_required_role(self, request):
        return Role.ADMIN if request.method not in ("GET", "HEAD", "OPTIONS") else None

    def get_queryset(self):
        return _by_host(SambaUser.objects.select_related("host"), self.request)

    @extend_schema(request=s.SambaUserCreateRequest, responses=ACCEPTED)
    def create(self, request):
        d = _valid(s.SambaUserCreateRequest, request).validated_data
        return _accepted(services.samba_user_start(user=request.user, action="add", **d))

    @extend_schema(request=s.PasswordRequest, responses=ACCEPTED)
    @action(detail=True, methods=["post"])
    def password(self, request, pk=None):
        row = self.get_object()
        password = _valid(s.PasswordRequest, request).validated_data["password"]
        return _accepted(
            services.samba_user_start(
                host=row.host, user=request.user, action="password", username=row.username, password=password
            )
        )

    @extend_schema(request=None, responses=ACCEPTED)
    @action(detail=True, methods=["post"])
    def enable(self, request, pk=None):
        row = self.get_object()
        return _accepted(
            services.samba_user_start(host=row.host, user=request.user, action="enable", username=row.username)
        )

    @extend_schema(request=None, responses=ACCEPTED)
    @action(detail=True, methods=["post"])
    def disable(self, request, pk=None):
        row = self.get_object()
        return _accepted(
            services.samba_user_start(host=row.host, user=request.user, action="disable", username=row.username)
        )

    @extend_schema(request=None, responses=ACCEPTED)
    def destroy(self, request, pk=None):
        row = self.get_object()
        return _accepted(
            services.samba_user_start(host=row.host, user=request.user, action="delete", username=row.username)
        )
