"""Storage inventory API (read): pools with their vdev tree, disks, datasets, snapshots (paginated, filterable)."""

from rest_framework import viewsets

from pools.api import serializers
from pools.models import Dataset, Disk, Pool, Snapshot


def _by_host(qs, request, field="host__name"):
    host = request.query_params.get("host")
    return qs.filter(**{field: host}) if host else qs


class PoolViewSet(viewsets.ReadOnlyModelViewSet):
    """Pools from the inventory. Filter: ?host=name."""

    def get_queryset(self):
        return _by_host(Pool.objects.select_related("host"), self.request)

    def get_serializer_class(self):
        return serializers.PoolDetailSerializer if self.action == "retrieve" else serializers.PoolSerializer


class DiskViewSet(viewsets.ReadOnlyModelViewSet):
    """Block devices and what they are used for. Filter: ?host=name."""

    serializer_class = serializers.DiskSerializer

    def get_queryset(self):
        return _by_host(Disk.objects.select_related("host", "pool"), self.request)


class DatasetViewSet(viewsets.ReadOnlyModelViewSet):
    """Filesystems and zvols with each property's value and source. Filter: ?host=name&pool=name."""

    serializer_class = serializers.DatasetSerializer

    def get_queryset(self):
        qs = _by_host(Dataset.objects.select_related("host"), self.request)
        pool = self.request.query_params.get("pool")
        return qs.filter(pool__name=pool) if pool else qs


class SnapshotViewSet(viewsets.ReadOnlyModelViewSet):
    """Snapshots, newest first, paginated. Filters: ?host=name&dataset=name&q=text."""

    serializer_class = serializers.SnapshotSerializer

    def get_queryset(self):
        qs = _by_host(Snapshot.objects.select_related("dataset"), self.request, "dataset__host__name")
        params = self.request.query_params
        if params.get("dataset"):
            qs = qs.filter(dataset__name=params["dataset"])
        if params.get("q"):
            qs = qs.filter(name__icontains=params["q"])
        return qs.order_by("-created_at", "pk")
