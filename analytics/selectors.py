"""Reads for alerts: the rules in effect, the conditions that hold now on a host (from the inventory in the
database, never a command), open and recent alerts."""

from dataclasses import dataclass, replace
from datetime import timedelta

from django.db.models import Sum
from django.utils import timezone

from analytics.choices import RULES, Level, Rule
from analytics.models import Alert, Channel, RuleSetting
from appliance.models import Host
from benchmarks.models import Run
from pools.models import Pool, Snapshot, Vdev

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
        found[rule.key] = (replace(rule, level=s.level, threshold=s.threshold if s.threshold is not None
                                   else rule.threshold) if s else rule, s.enabled if s else True)  # fmt: skip
    return found


def conditions(host: Host, now=None) -> list[Condition]:
    """What is wrong on the host now, by the enabled rules."""
    now = now or timezone.now()
    active = {k: r for k, (r, on) in rules().items() if on}
    found = []

    def add(key, subject, message, level=None):
        if key in active:
            found.append(Condition(key, subject, level or active[key].level, message))

    if host.facts_error:
        add("host_unreachable", host.name, f"{host.name} is unreachable: {host.facts_error[:300]}")
    errors = dict(Vdev.objects.filter(pool__host=host).values_list("pool__name").annotate(
        e=Sum("read_errors") + Sum("write_errors") + Sum("checksum_errors")))  # fmt: skip
    for pool in Pool.objects.filter(host=host):
        if pool.state != "ONLINE":
            add("pool_state", pool.name, f"Pool {pool.name} on {host.name} is {pool.state}.")
        if errors.get(pool.name):
            add("pool_errors", pool.name, f"Pool {pool.name} on {host.name}: {errors[pool.name]} device errors.")
        critical = active.get("capacity_critical")
        if critical and pool.capacity >= critical.threshold:
            add("capacity_critical", pool.name, f"Pool {pool.name} on {host.name} is {pool.capacity}% full.")
        elif "capacity_warning" in active and pool.capacity >= active["capacity_warning"].threshold:
            add("capacity_warning", pool.name, f"Pool {pool.name} on {host.name} is {pool.capacity}% full.")
        if pool.scan_function == "scrub" and pool.scan_errors:
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
        count = Snapshot.objects.filter(dataset__host=host).count()
        if count > budget.threshold:
            add("snapshot_budget", host.name, f"{host.name} has {count} snapshots (budget {budget.threshold:.0f}).")
    failed = active.get("benchmark_failed")
    if failed:
        since = now - timedelta(hours=failed.threshold)
        for run in Run.objects.filter(host=host, status="failed", finished_at__gte=since).only(
            "pk", "title", "message"
        ):
            add(
                "benchmark_failed",
                f"run {run.pk}",
                f"Benchmark #{run.pk} {run.title} on {host.name} failed: {run.message[:200]}",
            )
    drop = active.get("benchmark_drop")
    if drop:
        since = now - timedelta(days=drop.threshold)
        for run in Run.objects.filter(host=host, created_at__gte=since).exclude(flag="").only("pk", "title", "flag"):
            add("benchmark_drop", f"run {run.pk}", f"Benchmark #{run.pk} {run.title} on {host.name}: {run.flag}")
    return found


def open_alerts(limit: int = 200) -> list[Alert]:
    return list(Alert.objects.filter(cleared_at__isnull=True).select_related("host")[:limit])


def open_count() -> int:
    return Alert.objects.filter(cleared_at__isnull=True).count()


def recent_cleared(limit: int = 50) -> list[Alert]:
    return list(Alert.objects.filter(cleared_at__isnull=False).select_related("host").order_by("-cleared_at")[:limit])


def channels_for(level: str) -> list[Channel]:
    return [c for c in Channel.objects.filter(enabled=True) if LEVELS[level] >= LEVELS[c.min_level]]
