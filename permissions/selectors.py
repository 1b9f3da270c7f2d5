"""The permissions app's reads: the folders Tarn can edit (the host's mounted filesystems, from the inventory), the
recent walks, and the quotas as last read (the usage report, its chart over time)."""

from datetime import timedelta

from django.core.paginator import Paginator
from django.db.models import Sum
from django.utils import timezone

from appliance.charts import chart, series
from permissions.choices import is_system_mount
from permissions.models import AclWalk, QuotaPoint, QuotaReading, QuotaUse
from pools import selectors as pools

GIB = 1 << 30


def mounted_names(*, host) -> list[str]:
    """The filesystems whose folders may be edited: mounted, and not the system's own (root on ZFS)."""
    return [name for name, mount in pools.mounted_filesystem_mounts(host=host) if not is_system_mount(mount)]


def filesystem_names(*, host) -> list[str]:
    return pools.filesystem_names_on(host=host)


def recent_walks(*, host, limit: int = 10):
    return AclWalk.objects.filter(host=host).select_related("created_by")[:limit]


def quota_reading(*, host):
    return QuotaReading.objects.filter(host=host).first()


def quota_uses(*, host, kind: str = "", query: str = ""):
    """The usage report's rows: the fullest first (by % of their quota), then the largest."""
    rows = QuotaUse.objects.filter(host=host)
    if kind:
        rows = rows.filter(kind=kind)
    if query:
        rows = rows.filter(name__icontains=query)
    return rows.order_by("-percent", "-used")


def quota_page(*, host, kind: str = "", query: str = "", page=1, per_page: int = 50):
    return Paginator(quota_uses(host=host, kind=kind, query=query), per_page).get_page(page)


def quota_chart(*, host, kind: str, name: str, days: int = 90) -> dict:
    """One account's use over the last days (its daily points), and its quota summed where it has one."""
    since = timezone.localdate() - timedelta(days=days)
    points = list(
        QuotaPoint.objects.filter(host=host, kind=kind, name=name, day__gte=since).order_by("day").values("day", "used")
    )
    total = QuotaUse.objects.filter(host=host, kind=kind, name=name, quota__isnull=False).aggregate(q=Sum("quota"))["q"]
    lines = [series(f"{kind} {name}: used", [round(p["used"] / GIB, 3) for p in points])]
    if total:
        lines.append(series("quota", [round(total / GIB, 3)] * len(points), borderDash=[6, 4]))
    return chart("line", unit="GiB", labels=[p["day"].isoformat() for p in points], datasets=lines)


def quotas_at_least(*, host, percent: float):
    return QuotaUse.objects.filter(host=host, percent__gte=percent).order_by("-percent")[:1000]
