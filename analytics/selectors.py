"""Reads for analytics — the sampler's settings, hosts due a sample, chart data from the stored series with
benchmark and tuning markers — and for alerts: the rules in effect, the conditions that hold now on a host (from the inventory in the
database, never a command), open and recent alerts."""

from dataclasses import dataclass, replace
from datetime import timedelta

from django.db.models import Count, Max
from django.utils import timezone

from analytics.choices import BREAKDOWN_LIMIT, CHARTS, RULES, Chart, Level, Range, Rule
from analytics.hooks import SOURCES, TARN_SOURCES
from analytics.models import Alert, Channel, RuleSetting, Sample, SamplerSetting, SamplerState
from appliance.charts import chart as line_chart
from appliance.charts import series
from appliance.fleet import BAD, OK, WARN, Cell
from appliance.models import Host
from benchmarks.selectors import runs_failed_since, runs_flagged_since, runs_since
from pools.selectors import device_errors_by_pool, pool_list, snapshot_counts
from tuning.selectors import change_sets_since

LEVELS = {Level.WARNING: 1, Level.CRITICAL: 2}


@dataclass(frozen=True)
class Condition:
    rule: str
    subject: str
    level: str
    message: str


def rules() -> dict[str, tuple[Rule, bool]]:
    """Every rule as in effect: (the rule with the admin's level and threshold, enabled)."""
    saved = {s.key: s for s in RuleSetting.objects.all()}
    found = {}
    for rule in RULES:
        s = saved.get(rule.key)
        found[rule.key] = (
            replace(rule, level=s.level, threshold=s.threshold if s.threshold is not None else rule.threshold)
            if s
            else rule,
            s.enabled if s else True,
        )
    return found


CAPACITY_HYSTERESIS = 2  # percentage points below its threshold before an open capacity alert clears


def conditions(host: Host | None, now=None, open_: frozenset = frozenset()) -> list[Condition]:
    """What is wrong on the host now, by the enabled rules (host None: with Tarn itself, analytics.hooks). open_: the
    (rule, subject) alerts open now: a capacity alert holds until the pool is CAPACITY_HYSTERESIS points below the
    threshold, so 80 % ± 1 does not flap."""
    now = now or timezone.now()
    if host is None:
        active = {k: r for k, (r, on) in rules().items() if on}
        return [
            Condition(key, subject, active[key].level, message)
            for source in TARN_SOURCES
            for key, subject, message in source(host=None, now=now, active=active)
            if key in active
        ]

    def over(key: str, pool) -> bool:
        rule = active.get(key)
        margin = CAPACITY_HYSTERESIS if (key, pool.name) in open_ else 0
        return bool(rule) and pool.capacity >= rule.threshold - margin

    active = {k: r for k, (r, on) in rules().items() if on}
    found = []

    def add(key, subject, message, level=None):
        if key in active:
            found.append(Condition(key, subject, level or active[key].level, message))

    if host.facts_error:
        add("host_unreachable", host.name, f"{host.name} is unreachable: {host.facts_error[:300]}")
    errors = device_errors_by_pool(host=host)
    for pool in pool_list(host=host):
        if pool.state != "ONLINE":
            add("pool_state", pool.name, f"Pool {pool.name} on {host.name} is {pool.state}.")
        if errors.get(pool.pk):
            add("pool_errors", pool.name, f"Pool {pool.name} on {host.name}: {errors[pool.pk]} device errors.")
        if over("capacity_critical", pool):
            add("capacity_critical", pool.name, f"Pool {pool.name} on {host.name} is {pool.capacity}% full.")
        elif over("capacity_warning", pool):
            add("capacity_warning", pool.name, f"Pool {pool.name} on {host.name} is {pool.capacity}% full.")
        if pool.scan_function == "SCRUB" and pool.scan_errors:  # as zpool status says it
            add(
                "scrub_errors",
                pool.name,
                f"The last scrub of {pool.name} on {host.name} found {pool.scan_errors} errors.",
            )
        overdue = active.get("scrub_overdue")
        if overdue and pool.scan_end and pool.scan_end < now - timedelta(days=overdue.threshold):  # never: no date
            add("scrub_overdue", pool.name, f"{pool.name} on {host.name} has no scrub in {overdue.threshold:.0f} days.")
    budget = active.get("snapshot_budget")
    if budget:
        count = snapshot_counts(host=host).get(host.pk, 0)
        if count > budget.threshold:
            add("snapshot_budget", host.name, f"{host.name} has {count} snapshots (budget {budget.threshold:.0f}).")
    failed = active.get("benchmark_failed")
    if failed:
        since = now - timedelta(hours=failed.threshold)
        for run in runs_failed_since(host=host, since=since):
            add(
                "benchmark_failed",
                f"run {run.pk}",
                f"Benchmark #{run.pk} {run.title} on {host.name} failed: {run.status_message[:200]}",
            )
    drop = active.get("benchmark_drop")
    if drop:
        since = now - timedelta(days=drop.threshold)
        for run in runs_flagged_since(host=host, since=since):
            add("benchmark_drop", f"run {run.pk}", f"Benchmark #{run.pk} {run.title} on {host.name}: {run.flag}")
    for source in SOURCES:  # later apps' conditions (analytics.hooks)
        for key, subject, message in source(host=host, now=now, active=active):
            add(key, subject, message)
    return found


def open_alerts(limit: int = 200) -> list[Alert]:
    return list(Alert.objects.filter(cleared_at__isnull=True).select_related("host")[:limit])


def open_count() -> int:
    return Alert.objects.filter(cleared_at__isnull=True).count()


def recent_cleared(limit: int = 50) -> list[Alert]:
    return list(Alert.objects.filter(cleared_at__isnull=False).select_related("host").order_by("-cleared_at")[:limit])


def channels_for(level: str) -> list[Channel]:
    return [c for c in Channel.objects.filter(enabled=True) if LEVELS[level] >= LEVELS[c.min_level]]


# --- Series ------------------------------------------------------------------------------------------------------


def sampler_setting() -> SamplerSetting:
    return SamplerSetting.objects.filter(pk=1).first() or SamplerSetting(pk=1)


def sampler_initial() -> dict:
    setting = sampler_setting()
    return {"interval": setting.interval, "raw_hours": setting.raw_hours, "rollup_days": setting.rollup_days}


def hosts_due(now=None) -> list[Host]:
    """Hosts whose last sample is an interval old (or that have none), not being sampled now."""
    now = now or timezone.now()
    setting = sampler_setting()
    due = now - timedelta(seconds=setting.interval - 1)
    states = {s.pk: s for s in SamplerState.objects.all()}
    found = []
    for host in Host.objects.all():
        state = states.get(host.pk)
        if state is None or (
            (state.at is None or state.at <= due) and (state.busy_until is None or state.busy_until < now)
        ):
            found.append(host)
    return found


def _rows(host: Host, period: Range, now) -> list[tuple]:
    since = now - timedelta(seconds=period.seconds)
    return list(
        Sample.objects.filter(host=host, step=period.step, at__gte=since).order_by("at").values_list("at", "values")
    )


def _line(label: str, points: list) -> dict:
    return series(label, points, pointRadius=0, borderWidth=1.5, fill=False, tension=0.2)


def time_labels(rows: list[tuple]) -> list[str]:
    """The x axis: local times, with the date once the rows span most of a day."""
    fmt = "%H:%M:%S" if not rows or rows[-1][0] - rows[0][0] < timedelta(hours=20) else "%m-%d %H:%M"
    zone = timezone.get_current_timezone()
    return [at.astimezone(zone).strftime(fmt) for at, _ in rows]


def _levels(chart: Chart, group: str, subjects, rows: list[tuple]) -> list[dict]:
    """A gauge chart's lines: each subject's each metric, side by side."""
    return [
        _line(f"{subject} {label}", [v.get(group, {}).get(subject, {}).get(metric) for _, v in rows])
        for subject in subjects
        for metric, label in chart.metrics
    ]


def chart_data(chart: Chart, rows: list[tuple], by: str | None = None, labels: list[str] | None = None) -> dict:
    """One chart's spec for charts.js (labels, datasets, unit) from rows of (time, packed values): the overview sums
    the group's subjects per metric; a breakdown draws each subject's read + write (or each metric of a level, as
    latency), the busiest over the range first."""
    labels = labels if labels is not None else time_labels(rows)
    datasets, top = [], []
    if by is None:
        subjects = sorted({subject for _, v in rows for subject in v.get(chart.group, {})})
        if chart.gauge and len(subjects) > 1:
            datasets = _levels(chart, chart.group, subjects, rows)
        else:
            for metric, label in chart.metrics:
                points = []
                for _, v in rows:
                    found = [m[metric] for m in v.get(chart.group, {}).values() if metric in m]
                    points.append(round(sum(found), 2) if found else (None if chart.gauge else 0))
                datasets.append(_line(label, points))
    else:
        metrics = [m for m, _ in chart.metrics]
        totals: dict[str, float] = {}
        for _, v in rows:
            for subject, figures in v.get(by, {}).items():
                totals[subject] = totals.get(subject, 0) + sum(figures.get(m, 0) for m in metrics)
        top = sorted(totals, key=lambda s: -totals[s])[:BREAKDOWN_LIMIT]
        if chart.gauge:
            datasets = _levels(chart, by, top, rows)
        else:
            for subject in top:
                points = [round(sum(v.get(by, {}).get(subject, {}).get(m, 0) for m in metrics), 2) for _, v in rows]
                datasets.append(_line(subject, points))
            rest = set(totals) - set(top)
            if rest:
                points = [
                    round(sum(f.get(m, 0) for s_, f in v.get(by, {}).items() if s_ in rest for m in metrics), 2)
                    for _, v in rows
                ]
                datasets.append(_line("others", points))
    return line_chart("line", unit=chart.unit, labels=labels, datasets=datasets, subjects=top)


def markers(host: Host, period: Range, rows: list[tuple], now=None) -> list[dict]:
    """Benchmark runs and tuning change sets in the range, each at the index of the first row at or after it."""
    now = now or timezone.now()
    since = now - timedelta(seconds=period.seconds)
    events = [
        (r.created_at, f"Benchmark #{r.pk} {r.title}", r.get_absolute_url()) for r in runs_since(host=host, since=since)
    ]
    events += [
        (c.created_at, f"Tuning: {c.title}", c.get_absolute_url()) for c in change_sets_since(host=host, since=since)
    ]
    found = []
    times = [at for at, _ in rows]
    for at, label, url in sorted(events):
        index = next((i for i, t in enumerate(times) if t >= at), None)
        if index is not None:
            found.append({"index": index, "label": label[:80], "url": url, "at": at})
    return found


def analytics(host: Host, period: Range, focus: str | None = None, by: str | None = None, now=None) -> dict:
    """Everything the analytics page draws for one host and range: each chart's overview (or the focused chart's
    breakdown), the markers, the latest figures and what sampling costs."""
    now = now or timezone.now()
    rows = _rows(host, period, now)
    labels = time_labels(rows)
    marks = markers(host, period, rows, now)
    charts = []
    for chart in CHARTS.values():
        if focus and chart.key != focus:
            continue
        spec = chart_data(chart, rows, by if focus else None, labels)
        spec["markers"] = [{"index": m["index"], "label": m["label"]} for m in marks]
        charts.append({"chart": chart, "spec": spec, "id": f"chart-{chart.key}-data"})
    state = SamplerState.objects.filter(pk=host.pk).first()
    setting = sampler_setting()
    cost = None
    if state and state.at and state.counters:
        cpu_ms = state.counters.get("cost_cpu_ms", 0)
        cost = {
            "round_trip_ms": state.counters.get("round_trip_ms", 0),
            "cpu_ms": cpu_ms,
            "cpu_pct": cpu_ms / (10 * setting.interval),
        }
    latest = Sample.objects.filter(host=host, step=0).order_by("-at").values_list("values", flat=True).first() or {}
    table = []
    if focus and by:
        chart = CHARTS[focus]
        metrics = [m for m, _ in chart.metrics]
        for subject in charts[0]["spec"]["subjects"] if charts else []:
            table.append({"subject": subject, "now": [latest.get(by, {}).get(subject, {}).get(m) for m in metrics]})
    return {
        "charts": charts,
        "markers": marks,
        "state": state,
        "cost": cost,
        "points": len(rows),
        "table": table,
        "setting": setting,
        "by_label": dict(CHARTS[focus].breakdowns).get(by, "") if focus else "",
    }


def dashboard_live(*, hosts) -> dict:
    """The dashboard's "Now" table: each host's last sample (if under two minutes old) in a few figures. Two queries
    however many hosts: the newest sample's id per host, then those rows."""
    since = timezone.now() - timedelta(minutes=2)
    last = Sample.objects.filter(host__in=hosts, step=0, at__gte=since).values("host_id").annotate(pk=Max("pk"))
    latest = {s.host_id: s for s in Sample.objects.filter(pk__in=[r["pk"] for r in last])}
    rows = []
    for host in hosts:
        if host.pk not in latest:
            continue
        at, v = latest[host.pk].at, latest[host.pk].values

        def total(group, metrics, v=v):
            return sum(f.get(m, 0) for f in v.get(group, {}).values() for m in metrics)

        rows.append(
            {
                "host": host,
                "at": at,
                "pool": total("pool", ("r_bps", "w_bps")),
                "smb": total("smb", ("read_bps", "write_bps")),
                "nfs": total("nfs", ("read_bps", "write_bps")),
                "link": total("link", ("rx_bps", "tx_bps")),
                "arc": v.get("arc", {}).get("", {}).get("hit_pct"),
                "cpu": v.get("cpu", {}).get("", {}).get("busy_pct"),
            }
        )
    return {"live": rows}


def fleet_alerts(*, hosts) -> dict:
    """Per host: its open alerts, critical first (one query); none open is a cell too (ok)."""
    counts: dict[int, dict[str, int]] = {}
    for host_id, level, n in (
        Alert.objects.filter(host__in=hosts, cleared_at__isnull=True)
        .values_list("host_id", "level")
        .annotate(n=Count("id"))
        .order_by()
    ):
        counts.setdefault(host_id, {})[level] = n
    cells = {}
    for host in hosts:
        by = counts.get(host.pk, {})
        critical, warning = by.get(Level.CRITICAL, 0), by.get(Level.WARNING, 0)
        if critical or warning:
            words = [f"{critical} critical"] * bool(critical) + [f"{warning} warning{'s' * (warning != 1)}"] * bool(
                warning
            )
            cells[host.pk] = Cell(
                ", ".join(words), -1000 * critical - warning, BAD if critical else WARN, href="/alerts/"
            )
        else:
            cells[host.pk] = Cell("none open", 0, OK)
    return cells
