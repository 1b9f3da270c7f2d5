"""Reads for storage: always from the inventory in the database, never from zfs on a page load."""

from django.core.paginator import Paginator
from django.db.models import Max, Q, Sum

from pools.choices import SNAPSHOT_BUDGET
from pools.estimates import estimate
from pools.models import Dataset, Disk, Pool, Snapshot


def pool_list(*, host):
    return Pool.objects.filter(host=host)


def pools_by_host(*, hosts) -> dict[int, list[Pool]]:
    """Every pool of these hosts in one query, grouped by host id (for the dashboard)."""
    grouped: dict[int, list[Pool]] = {}
    for pool in Pool.objects.filter(host__in=hosts):
        grouped.setdefault(pool.host_id, []).append(pool)
    return grouped


def inventory_observed_at(*, host):
    """When the host's storage was last read (disks are always part of a refresh), or None if never."""
    return Disk.objects.filter(host=host).aggregate(at=Max("observed_at"))["at"]


def pool_detail(*, host, pk):
    return Pool.objects.filter(host=host).get(pk=pk)


def pool_vdevs(*, pool):
    return pool.vdevs.all()


def pool_datasets(*, pool):
    return pool.datasets.all()


def disk_list(*, host):
    return Disk.objects.filter(host=host).select_related("pool")


def disk_free(*, host):
    return [d for d in disk_list(host=host) if d.is_free]


def snapshot_total(*, host) -> dict:
    total = Dataset.objects.filter(host=host).aggregate(n=Sum("snapshot_count"))["n"] or 0
    return {"total": total, "budget": SNAPSHOT_BUDGET, "over": total > SNAPSHOT_BUDGET}


def snapshot_page(*, host, page, q="", dataset="", order="-created_at"):
    qs = Snapshot.objects.filter(dataset__host=host).select_related("dataset")
    if dataset:
        qs = qs.filter(dataset__name=dataset)
    if q:
        qs = qs.filter(Q(name__icontains=q) | Q(dataset__name__icontains=q))
    if order.lstrip("-") not in {"created_at", "name", "used", "referenced"}:
        order = "-created_at"
    return Paginator(qs.order_by(order, "pk"), 50).get_page(page)


def layout_estimate(*, host, layout):
    sizes = {d.by_id or d.path: (d.size, d.media) for d in Disk.objects.filter(host=host)}
    return estimate([(v.kind, [sizes[d] for d in v.disks if d in sizes]) for v in layout.data])


def filesystem_names(*, pool) -> list[str]:
    return list(pool.datasets.filter(type="filesystem").values_list("name", flat=True))


def dataset_properties(*, dataset) -> list[tuple[str, dict]]:
    """The properties Tarn manages, in a stable order, with value and source."""
    from appliance.host.names import DATASET_PROPERTIES

    return [(key, dataset.properties[key]) for key in DATASET_PROPERTIES if key in dataset.properties]


def snapshot_recent(*, dataset, limit=20):
    return dataset.snapshots.order_by("-created_at")[:limit]
