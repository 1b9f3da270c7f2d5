"""Reads of the capacity app: the forecasts as last made (pages, the API and the alert read these rows; nothing is
fitted on a page load), and a pool's or dataset's recorded series for its chart."""

from datetime import timedelta

from django.core.paginator import Paginator
from django.db.models import F, Q
from django.utils import timezone

from appliance.fleet import BAD, OK, WARN, Cell
from capacity.choices import KEEP_DAYS, ForecastState
from capacity.models import CapacityPoint, Forecast

DASHBOARD_DAYS = 90  # the dashboard names pools forecast full within this many days
ALERT_DAYS = 30  # the fleet page shows one within this many as bad (the alert's default)
POOL_PAGE_DATASETS = 8  # a pool's page names its datasets that fill first, up to this many
CHART_POINTS = 120  # a chart draws at most about this many recorded points (30 days of hourly ones, thinned)


def forecast_of(*, host, pool: str, dataset: str = "") -> Forecast | None:
    return Forecast.objects.filter(host=host, pool=pool, dataset=dataset).first()


def forecasts(*, hosts=None, host=None, pool: str = "", q: str = "", kind: str = ""):
    """Forecasts, those full soonest first (then those that never are, by how full they are)."""
    rows = Forecast.objects.select_related("host")
    if host is not None:
        rows = rows.filter(host=host)
    if hosts is not None:
        rows = rows.filter(host__in=hosts)
    if pool:
        rows = rows.filter(pool=pool)
    if kind == "pools":
        rows = rows.filter(dataset="")
    elif kind == "datasets":
        rows = rows.exclude(dataset="")
    if q:
        rows = rows.filter(Q(dataset__icontains=q) | Q(dataset="", pool__icontains=q))
    return rows.order_by(F("days_100").asc(nulls_last=True), "-used", "pool", "dataset")


def forecast_page(*, host, page, q: str = "", kind: str = ""):
    return Paginator(forecasts(host=host, q=q, kind=kind), 50).get_page(page)


def full_within(*, host, days: float):
    """The host's pools forecast full within days (the alert's rows)."""
    return Forecast.objects.filter(host=host, dataset="", state=ForecastState.GROWING, days_100__lte=days)


def series(*, host, pool: str, dataset: str = "", days: int = 30) -> list[tuple[object, int, int]]:
    """(at, used, total) of one pool (dataset "") or dataset over the last days, oldest first."""
    since = timezone.now() - timedelta(days=min(days, KEEP_DAYS))
    rows = CapacityPoint.objects.filter(host=host, pool=pool, dataset=dataset, at__gte=since).order_by("at")
    return list(rows.values_list("at", "used", "total"))


def chart(*, host, pool: str, dataset: str = "", row: Forecast | None = None) -> dict:
    """The chart's spec (static/js/charts.js): the percent used over the last 30 days (up to CHART_POINTS of them),
    then the forecast's days ahead (up to 30) at the likely, the high and the low rate, where it grows."""
    points = [(at, 100 * u / t) for at, u, t in series(host=host, pool=pool, dataset=dataset) if t]
    points = points[:: max(1, len(points) // CHART_POINTS)]
    labels = [f"{timezone.localtime(at):%b %d %H:%M}" for at, _ in points]
    used = [round(p, 2) for _, p in points]
    lines = {"likely": [], "soon": [], "late": []}
    if row is not None and row.state == ForecastState.GROWING and row.total:
        ahead = min(30, int(row.days_100) + 1 if row.days_100 is not None else 30)
        now = timezone.localtime(row.computed_at)
        labels += [f"{now + timedelta(days=d):%b %d} (+{d} d)" for d in range(1, ahead + 1)]
        for key, rate in (("likely", row.per_day), ("soon", row.per_day_high), ("late", row.per_day_low)):
            lines[key] = [None] * (len(used) - 1) + [
                round(min(100.0, 100 * (row.used + rate * d) / row.total), 2) for d in range(0, ahead + 1)
            ]
    datasets = [{"label": "Used %", "data": used, "borderColor": "#2563eb", "pointRadius": 0}]
    for key, label, colour in (("likely", "Forecast", "#b45309"), ("soon", "Early bound", "#dc2626"),
                               ("late", "Late bound", "#16a34a")):  # fmt: skip
        if lines[key]:
            datasets.append({"label": label, "data": lines[key], "borderColor": colour, "borderDash": [4, 3],
                             "pointRadius": 0})  # fmt: skip
    return {"type": "line", "unit": "% used", "labels": labels, "datasets": datasets if used else []}


def pool_forecast_panel(*, pool) -> tuple[str, dict]:
    """The pool page's section: the pool's forecast with its chart, and its datasets that fill first."""
    row = forecast_of(host=pool.host, pool=pool.name)
    datasets = (
        forecasts(host=pool.host, pool=pool.name, kind="datasets")
        .filter(state=ForecastState.GROWING)
        .exclude(days_100=None)[:POOL_PAGE_DATASETS]
    )
    context = {"pool": pool, "forecast": row, "datasets": list(datasets)}
    if row is not None:
        context["chart"] = chart(host=pool.host, pool=pool.name, row=row)
    return "capacity/_pool_forecast.html", context


def dashboard_forecasts(*, hosts) -> dict:
    """The dashboard's panel, shown only when a pool is forecast full within DASHBOARD_DAYS."""
    soon = list(
        Forecast.objects.select_related("host")
        .filter(host__in=hosts, dataset="", state=ForecastState.GROWING, days_100__lte=DASHBOARD_DAYS)
        .order_by("days_100")[:10]
    )
    return {"extra_panels": [("capacity/_dashboard.html", {"forecasts": soon})]} if soon else {}


def fleet_forecast(*, hosts) -> dict:
    """Per host: the pool forecast to fill first and in how many days (one query); warn within 90 days, bad within
    30 (the alert's)."""
    cells = {}
    rows = Forecast.objects.filter(host__in=hosts, dataset="", state=ForecastState.GROWING, days_100__isnull=False)
    for host_id, pool, days in rows.order_by("days_100").values_list("host_id", "pool", "days_100"):
        if host_id not in cells:
            level = BAD if days <= ALERT_DAYS else WARN if days <= DASHBOARD_DAYS else OK
            cells[host_id] = Cell(f"{pool} full in {days:.0f} d", days, level)
    return cells
