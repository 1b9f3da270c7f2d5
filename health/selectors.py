"""Reads for disk health: the rows a page or rule needs, the notes other apps' disk pages show, the dashboard's
panel and a disk's temperature history."""

from datetime import timedelta

from django.db.models import Count, Q
from django.urls import reverse
from django.utils import timezone

from appliance.charts import chart, series
from appliance.fleet import BAD, OK, WARN, Cell
from health.choices import HealthState
from health.models import DiskHealth, HealthPass, SelfTestRun, SelfTestSchedule, TemperaturePoint
from pools import selectors as pools


def disks_all():
    return DiskHealth.objects.select_related("host")


def disks_read(*, host):
    return DiskHealth.objects.filter(host=host)


def labelled(rows) -> list:
    """Each row with .label: the name its disk has under /dev/disk/by-id in the inventory (virtio-zfsdisk1,
    ata-…, nvme-…: what is printed on the drive or set for the VM), else the kernel's (vda: no serial, no by-id)."""
    rows = list(rows)
    ids = pools.disk_ids(hosts={r.host_id for r in rows})
    for row in rows:
        row.label = ids.get((row.host_id, row.name), "").rsplit("/", 1)[-1] or row.name
    return rows


def disk_get(*, host, pk: int) -> DiskHealth | None:
    return DiskHealth.objects.filter(host=host, pk=pk).first()


def runs(*, host, limit: int = 10):
    return SelfTestRun.objects.filter(host=host)[:limit] if limit else SelfTestRun.objects.filter(host=host)


def runs_all():
    return SelfTestRun.objects.select_related("host")


def schedules_all():
    return SelfTestSchedule.objects.select_related("host")


def schedules(*, host):
    return SelfTestSchedule.objects.filter(host=host)


def health_pass(*, host) -> HealthPass | None:
    return HealthPass.objects.filter(host=host).first()


def disk_notes(*, host, disks) -> dict[str, dict]:
    """The pools app's disk list and vdev tree: {disk name: {state, label, badge, reason, url}} (one query)."""
    names = {d.name for d in disks}
    notes = {}
    for row in DiskHealth.objects.filter(host=host, name__in=names):
        notes[row.name] = {
            "state": row.shown,
            "label": row.shown_label,
            "badge": row.badge,
            "reason": "; ".join(row.shown_reasons[:2]),
            "url": reverse("health-disk", args=[row.pk]),
        }
    return notes


def dashboard_health(*, hosts) -> dict:
    """The dashboard's panel: disks failing or to watch on these hosts (one query; nothing when all are well)."""
    rows = list(
        DiskHealth.objects.filter(
            Q(state__in=[HealthState.FAILING, HealthState.WATCH, HealthState.SILENT]) | Q(power=HealthState.SILENT),
            host__in=hosts,
        )
        .select_related("host")
        .order_by("state", "host__name", "name")[:20]
    )
    return {"extra_panels": [("health/_dashboard.html", {"disks": labelled(rows)})]} if rows else {}


def pool_of(*, host, disk: DiskHealth):
    """The inventory's row for this disk (its pool and vdev role), or None."""
    return next((d for d in pools.disk_list(host=host) if d.name == disk.name), None)


def temperature_chart(*, disk: DiskHealth, days: int = 7, now=None) -> dict:
    """The disk's temperature over the last days, from the stored reads (one point per read)."""
    now = now or timezone.now()
    rows = list(
        TemperaturePoint.objects.filter(disk=disk, at__gte=now - timedelta(days=days))
        .order_by("at")
        .values_list("at", "celsius")
    )
    labels = [timezone.localtime(at).strftime("%m-%d %H:%M") for at, _ in rows]
    lines = [series("°C", [c for _, c in rows])]
    if disk.temp_warn:
        lines.append(series("the drive's limit", [disk.temp_warn] * len(rows), borderDash=[4, 4]))
    return chart("line", unit="°C", labels=labels, datasets=lines)


def fleet_disks(*, hosts) -> dict:
    """Per host: its disks' health in a word (one query): failing or not answering (bad), to watch (warn), well."""
    counts: dict[int, dict[str, int]] = {}
    for host_id, state, n in (
        DiskHealth.objects.filter(host__in=hosts).values_list("host_id", "state").annotate(n=Count("id")).order_by()
    ):
        counts.setdefault(host_id, {})[state] = n
    cells = {}
    for host_id, by in counts.items():
        bad = by.get(HealthState.FAILING, 0) + by.get(HealthState.SILENT, 0)
        watch = by.get(HealthState.WATCH, 0)
        if bad:
            cells[host_id] = Cell(f"{bad} failing", -1000 * bad - watch, BAD)
        elif watch:
            cells[host_id] = Cell(f"{watch} to watch", -watch, WARN)
        else:
            cells[host_id] = Cell(f"{sum(by.values())} well", 0, OK)
    return cells
