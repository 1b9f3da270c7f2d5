"""Storage API: the inventory (read) and every storage change (202 + the Operation to follow); schedules and disk
figures are rows saved at once (200, 201, 204).

Requests are checked for shape here and for rules by the same services the pages call.
"""

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from appliance.api.base import ACCEPTED, accepted, by_host, valid
from appliance.api.serializers import ConfirmRequest
from appliance.auth import requires
from appliance.choices import Role
from appliance.models import Host
from pools import selectors, services
from pools.api import serializers as s
from pools.models import Dataset, Disk, Pool, Snapshot, SnapshotTask


class PoolViewSet(viewsets.ReadOnlyModelViewSet):
    """Pools from the inventory (filter: ?host=name), and pool operations."""

    ADMIN_ACTIONS = {"create", "destroy", "device", "add", "export", "import_pool"}

    def get_required_role(self, request):
        return Role.ADMIN if self.action in self.ADMIN_ACTIONS else None

    def get_queryset(self):
        return by_host(Pool.objects.select_related("host"), self.request)

    def get_serializer_class(self):
        return s.PoolDetailSerializer if self.action == "retrieve" else s.PoolSerializer

    @extend_schema(request=s.PoolCreateRequest, responses=ACCEPTED)
    def create(self, request):
        data = valid(s.PoolCreateRequest, request)
        d = data.validated_data
        return accepted(
            services.pool_create_start(
                host=d["host"],
                user=request.user,
                name=d["name"],
                layout=data.layout(),
                pool_props=d["pool_properties"],
                root_props=d["root_properties"],
                encryption=d["encryption"],
                passphrase=d["passphrase"],
                passphrase_confirm=d["passphrase_confirm"],
                pbkdf2iters=d.get("pbkdf2iters"),
            )
        )

    @extend_schema(request=ConfirmRequest, responses=ACCEPTED)
    def destroy(self, request, pk=None):
        pool = self.get_object()
        confirm = valid(ConfirmRequest, request).validated_data["confirm"]
        return accepted(services.pool_destroy_start(host=pool.host, user=request.user, name=pool.name, confirm=confirm))

    @extend_schema(request=s.ActionRequest, responses=ACCEPTED)
    @action(detail=True, methods=["post"])
    def scrub(self, request, pk=None):
        pool = self.get_object()
        act = valid(s.ActionRequest, request).validated_data["action"]
        return accepted(services.pool_scrub_start(host=pool.host, user=request.user, pool=pool.name, action=act))

    @extend_schema(request=s.ActionRequest, responses=ACCEPTED)
    @action(detail=True, methods=["post"])
    def trim(self, request, pk=None):
        pool = self.get_object()
        act = valid(s.ActionRequest, request).validated_data["action"]
        return accepted(services.pool_trim_start(host=pool.host, user=request.user, pool=pool.name, action=act))

    @extend_schema(request=s.DeviceRequest, responses=ACCEPTED)
    @action(detail=True, methods=["post"])
    def device(self, request, pk=None):
        """offline, online, clear, replace, attach or detach a disk."""
        pool = self.get_object()
        d = valid(s.DeviceRequest, request).validated_data
        return accepted(services.pool_device_start(host=pool.host, user=request.user, pool=pool.name, **d))

    @extend_schema(request=s.LayoutRequest, responses=ACCEPTED)
    @action(detail=True, methods=["post"])
    def add(self, request, pk=None):
        pool = self.get_object()
        layout = valid(s.LayoutRequest, request).layout()
        return accepted(services.pool_add_start(host=pool.host, user=request.user, pool=pool.name, layout=layout))

    @extend_schema(request=None, responses=ACCEPTED)
    @action(detail=True, methods=["post"])
    def export(self, request, pk=None):
        pool = self.get_object()
        return accepted(services.pool_export_start(host=pool.host, user=request.user, name=pool.name))

    @extend_schema(request=s.ScrubScheduleRequest, responses={200: s.ScrubScheduleSerializer})
    @action(detail=True, methods=["put"], url_path="scrub-schedule")
    def scrub_schedule(self, request, pk=None):
        """Scrub the pool every so many days (started by beat when due); DELETE removes the schedule."""
        pool = self.get_object()
        every = valid(s.ScrubScheduleRequest, request).validated_data["every_days"]
        schedule = services.scrub_schedule_save(host=pool.host, pool=pool.name, every_days=every)
        return Response(s.ScrubScheduleSerializer(schedule).data)

    @extend_schema(request=None, responses={204: None})
    @scrub_schedule.mapping.delete
    def scrub_schedule_delete(self, request, pk=None):
        pool = self.get_object()
        services.scrub_schedule_save(host=pool.host, pool=pool.name, every_days=None)
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(request=s.HostRequest, responses=ACCEPTED)
    @action(detail=False, methods=["post"])
    def refresh(self, request):
        """Read the host's pools, disks, datasets and snapshots again."""
        host = valid(s.HostRequest, request).validated_data["host"]
        return accepted(services.inventory_refresh_start(host=host, user=request.user))

    @extend_schema(request=s.HostRequest, responses=ACCEPTED)
    @action(detail=False, methods=["post"], url_path="import-scan")
    def import_scan(self, request):
        host = valid(s.HostRequest, request).validated_data["host"]
        return accepted(services.pool_import_scan_start(host=host, user=request.user))

    @extend_schema(request=s.ImportRequest, responses=ACCEPTED)
    @action(detail=False, methods=["post"], url_path="import")
    def import_pool(self, request):
        d = valid(s.ImportRequest, request).validated_data
        return accepted(services.pool_import_start(user=request.user, **d))


class DiskViewSet(viewsets.ReadOnlyModelViewSet):
    """Block devices and what they are used for. Filter: ?host=name."""

    serializer_class = s.DiskSerializer

    def get_queryset(self):
        return by_host(Disk.objects.select_related("host", "pool"), self.request)


@requires(write=Role.ADMIN)
class MediaSpeedViewSet(viewsets.ViewSet):
    """Each media type's per-disk figures that the pool-creation preview multiplies (the defaults, or what an
    admin entered); PUT …/<media>/ changes one."""

    @extend_schema(responses={200: s.MediaSpeedSerializer(many=True)})
    def list(self, request):
        speeds = [{"media": m, "mb_s": mb_s, "iops": iops} for m, (mb_s, iops) in selectors.media_speeds().items()]
        return Response(s.MediaSpeedSerializer(speeds, many=True).data)

    @extend_schema(
        request=s.MediaSpeedSerializer,
        responses={200: s.MediaSpeedSerializer},
        parameters=[OpenApiParameter("id", str, OpenApiParameter.PATH, description="hdd, ssd or nvme.")],
    )
    def update(self, request, pk=None):
        data = valid(s.MediaSpeedSerializer, request).validated_data
        services.media_speed_save(media=pk, **data)
        return Response(s.MediaSpeedSerializer({"media": pk, **data}).data)


class SnapshotTaskViewSet(viewsets.ModelViewSet):
    """Snapshot schedules (filter: ?host=name): each takes <prefix>-YYYY-MM-DD_HH-MM snapshots and prunes only its
    own by its retention. A change names only the fields it changes; a refusal is a 400 naming the field."""

    serializer_class = s.SnapshotTaskSerializer

    def get_queryset(self):
        return by_host(SnapshotTask.objects.select_related("host"), self.request)

    def perform_create(self, serializer):
        data = dict(serializer.validated_data)
        serializer.instance = services.snapshot_task_save(host=data.pop("host"), data=data)

    def perform_update(self, serializer):
        data = dict(serializer.validated_data)
        data.pop("host", None)  # a schedule stays on its host
        task = serializer.instance
        serializer.instance = services.snapshot_task_save(host=task.host, data=data, pk=task.pk)

    def perform_destroy(self, instance):
        services.snapshot_task_delete(host=instance.host, pk=instance.pk)


class DatasetViewSet(viewsets.ReadOnlyModelViewSet):
    """Filesystems and zvols with each property's value and source (filter: ?host=name&pool=name), and changes."""

    serializer_class = s.DatasetSerializer

    def get_queryset(self):
        qs = by_host(Dataset.objects.select_related("host"), self.request)
        pool = self.request.query_params.get("pool")
        return qs.filter(pool__name=pool) if pool else qs

    @extend_schema(request=s.DatasetCreateRequest, responses=ACCEPTED)
    def create(self, request):
        d = valid(s.DatasetCreateRequest, request).validated_data
        return accepted(
            services.dataset_create_start(
                host=d["host"], user=request.user, name=d["name"], props=d["properties"], volume_size=d["volsize"]
            )
        )

    @extend_schema(request=s.PropertiesRequest, responses=ACCEPTED)
    def partial_update(self, request, pk=None):
        """Set properties (only those given change)."""
        ds = self.get_object()
        props = valid(s.PropertiesRequest, request).validated_data["properties"]
        return accepted(services.dataset_set_start(host=ds.host, user=request.user, name=ds.name, props=props))

    @extend_schema(request=s.InheritRequest, responses=ACCEPTED)
    @action(detail=True, methods=["post"])
    def inherit(self, request, pk=None):
        ds = self.get_object()
        key = valid(s.InheritRequest, request).validated_data["property"]
        return accepted(services.dataset_inherit_start(host=ds.host, user=request.user, name=ds.name, key=key))

    @extend_schema(request=s.RenameRequest, responses=ACCEPTED)
    @action(detail=True, methods=["post"])
    def rename(self, request, pk=None):
        ds = self.get_object()
        new = valid(s.RenameRequest, request).validated_data["new_name"]
        return accepted(services.dataset_rename_start(host=ds.host, user=request.user, name=ds.name, new_name=new))

    @extend_schema(request=ConfirmRequest, responses=ACCEPTED)
    def destroy(self, request, pk=None):
        ds = self.get_object()
        confirm = valid(ConfirmRequest, request).validated_data["confirm"]
        return accepted(services.dataset_destroy_start(host=ds.host, user=request.user, name=ds.name, confirm=confirm))


class SnapshotViewSet(viewsets.ReadOnlyModelViewSet):
    """Snapshots, newest first, paginated (filters: ?host=name&dataset=name&q=text), and snapshot operations."""

    serializer_class = s.SnapshotSerializer

    def get_queryset(self):
        params = self.request.query_params
        host = None
        if params.get("host"):
            host = Host.objects.filter(name=params["host"]).first()
            if host is None:
                return Snapshot.objects.none()
        return selectors.snapshot_search(host=host, q=params.get("q", ""), dataset=params.get("dataset", ""))

    @extend_schema(request=s.SnapshotCreateRequest, responses=ACCEPTED)
    def create(self, request):
        d = valid(s.SnapshotCreateRequest, request).validated_data
        return accepted(services.snapshot_create_start(user=request.user, **d))

    @extend_schema(request=s.RollbackRequest, responses=ACCEPTED)
    @action(detail=True, methods=["post"])
    def rollback(self, request, pk=None):
        snap = self.get_object()
        d = valid(s.RollbackRequest, request).validated_data
        return accepted(
            services.snapshot_rollback_start(host=snap.dataset.host, user=request.user, snapshot=snap.full_name, **d)
        )

    @extend_schema(request=s.CloneRequest, responses=ACCEPTED)
    @action(detail=True, methods=["post"])
    def clone(self, request, pk=None):
        snap = self.get_object()
        target = valid(s.CloneRequest, request).validated_data["target"]
        return accepted(
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
        tag = valid(s.HoldRequest, request).validated_data["tag"]
        return accepted(
            services.snapshot_hold_start(
                host=snap.dataset.host, user=request.user, snapshot=snap.full_name, tag=tag, release=release
            )
        )

    @extend_schema(request=None, responses=ACCEPTED)
    def destroy(self, request, pk=None):
        snap = self.get_object()
        return accepted(
            services.snapshot_destroy_start(host=snap.dataset.host, user=request.user, snapshots=[snap.full_name])
        )

    @extend_schema(request=s.SnapshotDestroyRequest, responses=ACCEPTED)
    @action(detail=False, methods=["post"], url_path="destroy")
    def destroy_many(self, request):
        """Destroy many snapshots in one operation (with progress)."""
        d = valid(s.SnapshotDestroyRequest, request).validated_data
        return accepted(services.snapshot_destroy_start(user=request.user, **d))
