"""Reads for benchmarks: runs of a host, one run with its chart data, comparisons (with the pool's expected
figures), suites, schedules and their history, the targets a run may use, and a run's results as CSV rows."""

from django.core.paginator import Paginator
from django.db.models import Max, Q

from appliance.charts import chart, series
from appliance.choices import RunStatus
from appliance.models import Host
from benchmarks.choices import RunKind
from benchmarks.models import CustomProfile, Run, Schedule, Suite
from benchmarks.profiles import BUILT_IN, PROFILES
from hostlib.digits import is_digits
from hostlib.fio import size_bytes
from pools.selectors import mounted_filesystem_names, pool_estimate, pool_named
from shares.selectors import writable_shares
from tuning.selectors import host_addresses


def run_page(*, host, page=1):
    runs = Run.objects.filter(host=host).select_related("created_by", "suite", "operation")
    runs = runs.defer("raw", "series", "manifest", "operation__log")
    return Paginator(runs, 25).get_page(page)


def suite_list(*, host, limit: int = 10) -> list[Suite]:
    return list(Suite.objects.filter(host=host).select_related("schedule")[:limit])


def schedule_list(*, host) -> list[Schedule]:
    return list(Schedule.objects.filter(host=host))


def network_choices(*, host) -> tuple[list[tuple[int, str]], list[str]]:
    """Peers ((id, name) of every other host Tarn manages, this machine included) and the host's addresses."""
    return list(Host.objects.exclude(pk=host.pk).order_by("name").values_list("pk", "name")), host_addresses(host)


def run_targets(*, host) -> list[str]:
    """Mounted filesystems of the host (a run makes its scratch dataset under one)."""
    return mounted_filesystem_names(host=host)


def share_targets(*, host) -> list[tuple[str, str]]:
    """Shares a run may mount over loopback: (value, label)."""
    smb, nfs = writable_shares(host=host)
    return [(f"smb:{s.name}", f"SMB {s.name} ({s.dataset})") for s in smb] + [
        (f"nfs:{e.path}", f"NFS {e.path}") for e in nfs
    ]


def storage_profile(key: str):
    """A profile that runs fio (built in or an admin's copy), None for anything else."""
    found = profile_get(key)
    return found if found and found.jobs else None


def storage_profiles() -> list:
    """Built-in storage profiles, then the admins' copies."""
    return [p for p in BUILT_IN if p.jobs] + [c.as_profile() for c in CustomProfile.objects.all()]


def profile_choices() -> list[tuple[str, str]]:
    return [(p.key, p.title) for p in storage_profiles()]


def profile_get(key: str):
    """A built-in profile or an admin's copy (custom-<id>), None if there is none."""
    if key in PROFILES:
        return PROFILES[key]
    number = key.removeprefix("custom-")
    row = CustomProfile.objects.filter(pk=int(number)).first() if is_digits(number) and number != key else None
    return row.as_profile() if row else None


def network_profiles():
    return [p for p in BUILT_IN if p.network]


def run_charts(run: Run) -> dict:
    """Chart data: bandwidth over time per job (MiB/s per second, read and write), and latency percentiles."""
    timeline = chart("line", unit="MiB/s")
    for n, points in enumerate(run.series):
        for direction, label in ((0, "read"), (1, "write")):
            values = [round(p[1] / 1024, 1) for p in points if p[2] == direction]
            if values:
                timeline["labels"] = timeline["labels"] or list(range(1, len(values) + 1))
                timeline["datasets"].append(series(f"{run.jobs[n]['name']} {label}", values))
    latency = chart("bar", unit="µs", labels=["p50", "p95", "p99", "p99.9"])
    for n, result in enumerate(run.results):
        for direction in ("read", "write"):
            side = result.get(direction)
            if side and side.get("p50_ns"):
                data = [round((side[k] or 0) / 1000, 1) for k in ("p50_ns", "p95_ns", "p99_ns", "p999_ns")]
                latency["datasets"].append(series(f"{result.get('job', n + 1)} {direction}", data))
    per_job = chart("line", unit="IOPS")
    warm = any("cache" in r for r in run.results)  # a cache warm-up: its passes get their own two charts
    if len(run.results) > 1 and not warm:  # a sweep: IOPS against queue depth (or file size)
        per_job["labels"] = [r.get("job") for r in run.results]
        for direction in ("read", "write"):
            values = [round((r.get(direction) or {}).get("iops") or 0) for r in run.results]
            if any(values):
                per_job["datasets"].append(series(f"{direction} IOPS", values))
    passes = chart("line", unit="MiB/s")
    hits = chart("line", unit="%")
    if warm:  # each pass's read bandwidth and hit ratios
        passes["labels"] = hits["labels"] = [r.get("job") for r in run.results]
        passes["datasets"].append(
            series("read MiB/s", [round(((r.get("read") or {}).get("bw_bytes") or 0) / 2**20, 1) for r in run.results])
        )
        for key, label in (("l2_hit_pct", "L2ARC hits %"), ("arc_hit_pct", "ARC hits %")):
            hits["datasets"].append(series(label, [(r.get("cache") or {}).get(key) for r in run.results]))
    return {"timeline": timeline, "latency": latency, "per_job": per_job, "passes": passes, "hits": hits}


def run_warnings(run: Run) -> list[str]:
    """What makes this result less than it seems (shown beside it)."""
    warnings = []
    arc_max = (run.manifest or {}).get("arc_c_max") or 0
    working = max((size_bytes(j["size"]) * j.get("numjobs", 1) for j in run.jobs if j.get("size")), default=0)
    if arc_max and working and working < 2 * arc_max:
        warnings.append(
            f"The working set ({working >> 20} MiB) is smaller than twice the ARC's maximum ({arc_max >> 20} MiB): "
            "reads may come from RAM, not the disks."
        )
    if any(j.get("iodepth", 1) > 1 and j.get("ioengine") in ("psync", "sync") for j in run.jobs):
        warnings.append("A queue depth above 1 with a synchronous engine runs at queue depth 1.")
    if run.kind == RunKind.NETWORK and any(
        (r.get(d) or {}).get("retransmits") for r in run.results for d in ("read", "write")
    ):
        warnings.append(
            "TCP retransmitted segments: the path drops packets (a duplex mismatch, a full buffer, or an "
            "MTU the switch does not carry)."
        )
    return warnings


METRICS = (
    ("bw_bytes", "Bandwidth (MB/s)", 1e6, True),
    ("iops", "IOPS", 1, True),
    ("p99_ns", "p99 latency (µs)", 1e3, False),
)


def run_label(run: Run) -> str:
    props = " ".join(f"{k}={v}" for k, v in sorted((run.properties or {}).items()))
    return f"#{run.pk} {run.title}{f' ({props})' if props else ''}"


def run_compare(*, run_ids: list[int], host) -> dict:
    """Runs side by side: per job, direction and metric, each run's value and its difference from the first in
    percent (better or worse: more bandwidth and IOPS is better, more latency is worse), and the pool's expected
    figures from its layout beside the bandwidth."""
    found = {r.pk: r for r in Run.objects.filter(host=host, pk__in=run_ids[:24], outcome=RunStatus.SUCCEEDED)}
    return compare([found[i] for i in run_ids if i in found])


def compare(runs: list[Run]) -> dict:
    rows, bars = [], chart("bar", unit="MB/s")
    keys = []
    for run in runs:
        for result in run.results:
            for direction in ("read", "write"):
                if result.get(direction) and (result["job"], direction) not in keys:
                    keys.append((result["job"], direction))
    for job, direction in keys:
        for metric, label, scale, higher_better in METRICS:
            values = []
            for run in runs:
                side = next((r.get(direction) for r in run.results if r.get("job") == job), None)
                values.append(side[metric] / scale if side and side.get(metric) is not None else None)
            base = values[0] if values else None
            cells = [
                {
                    "value": v,
                    "diff": (v / base - 1) * 100 if v is not None and base else None,
                    "better": v is not None and base and ((v > base) == higher_better) and v != base,
                }
                for v in values
            ]
            rows.append({"job": job, "direction": direction, "metric": label, "cells": cells})
    bars["labels"] = [f"{job} {direction}" for job, direction in keys]
    for run in runs:
        data = []
        for job, direction in keys:
            side = next((r.get(direction) for r in run.results if r.get("job") == job), None)
            data.append(round(side["bw_bytes"] / 1e6, 1) if side else None)
        bars["datasets"].append(series(run_label(run), data))
    expected = _expected(runs)
    if expected:
        figures = {"read": expected.read_mbs, "write": expected.write_mbs}
        bars["datasets"].append(series("Pool's estimate from its layout", [figures[d] for _, d in keys]))
    return {"runs": runs, "rows": rows, "chart": bars, "expected": expected, "labels": [run_label(r) for r in runs]}


def _expected(runs: list[Run]):
    """The estimate of the pool the (storage) runs used, when they all used one."""
    pools = {(r.host_id, r.target.split("/")[0]) for r in runs if r.kind == RunKind.STORAGE}
    if len(pools) != 1 or len(pools) != len({r.kind for r in runs}) or not runs:
        return None
    host_id, name = pools.pop()
    pool = pool_named(host_id=host_id, name=name)
    return pool_estimate(pool=pool) if pool else None


def suite_detail(suite: Suite) -> dict:
    members = list(suite.runs.order_by("pk").select_related("operation").defer("raw", "series", "operation__log"))
    return {
        "suite": suite,
        **compare([r for r in members if r.outcome == RunStatus.SUCCEEDED]),
        "members": members,
        "active_run": next((r for r in members if r.is_active), None),
    }


def schedule_history(schedule: Schedule, limit: int = 200) -> dict:
    """The schedule's runs over time: bandwidth per profile (MB/s), flagged drops listed."""
    runs = list(
        schedule.runs.filter(outcome=RunStatus.SUCCEEDED).order_by("-created_at").defer("raw", "series")[:limit]
    )[::-1]
    labels = sorted({f"{r.created_at:%Y-%m-%d %H:%M}" for r in runs})
    history = chart("line", unit="MB/s", labels=labels)
    for profile in dict.fromkeys(r.profile for r in runs):
        points = {f"{r.created_at:%Y-%m-%d %H:%M}": round(r.bandwidth / 1e6, 1) for r in runs if r.profile == profile}
        history["datasets"].append(series(profile, [points.get(x) for x in labels], spanGaps=True))
    flagged = [r for r in runs if r.flag][::-1]
    return {"chart": history, "flagged": flagged, "count": len(runs)}


def results_rows(run: Run) -> list[list]:
    """One row per job and direction: what a spreadsheet wants."""
    header = [
        "run",
        "profile",
        "target",
        "job",
        "direction",
        "bandwidth_bytes_s",
        "iops",
        "lat_mean_ns",
        "p50_ns",
        "p95_ns",
        "p99_ns",
        "p99.9_ns",
        "properties",
        "started",
    ]
    rows = [header]
    props = " ".join(f"{k}={v}" for k, v in sorted((run.properties or {}).items()))
    for result in run.results:
        for direction in ("read", "write"):
            side = result.get(direction)
            if side:
                rows.append(
                    [
                        run.pk,
                        run.profile,
                        run.target,
                        result.get("job"),
                        direction,
                        side.get("bw_bytes"),
                        side.get("iops"),
                        side.get("lat_mean_ns"),
                        side.get("p50_ns"),
                        side.get("p95_ns"),
                        side.get("p99_ns"),
                        side.get("p999_ns"),
                        props,
                        run.created_at.isoformat(),
                    ]
                )
    return rows


def runs_last_succeeded() -> list[Run]:
    """The newest successful run of each host, profile and target (for /metrics)."""
    last = Run.objects.filter(outcome=RunStatus.SUCCEEDED).values("host_id", "profile", "target").annotate(pk=Max("id"))
    return list(Run.objects.filter(pk__in=[r["pk"] for r in last]).only("host_id", "profile", "target", "results"))


def runs_failed_since(*, host: Host, since) -> list[Run]:
    """The host's runs that failed since then: on their own, or with their Operation (a worker that died)."""
    ended = Q(finished_at__gte=since) | Q(finished_at__isnull=True, operation__finished_at__gte=since)
    failed = Run.objects.filter(ended, host=host).status_in(RunStatus.FAILED).select_related("operation")
    return list(failed.defer("raw", "series", "manifest", "results", "operation__log"))


def runs_flagged_since(*, host: Host, since) -> list[Run]:
    """Scheduled runs flagged as a drop against their history."""
    return list(Run.objects.filter(host=host, created_at__gte=since).exclude(flag="").only("pk", "title", "flag"))


def runs_since(*, host: Host, since) -> list[Run]:
    """The host's runs started since then (for markers on charts)."""
    return list(Run.objects.filter(host=host, created_at__gte=since).only("pk", "title", "created_at"))
