"""Reads for benchmarks: runs of a host, one run with its chart data, the datasets a run may target."""

from appliance.host.fio import size_bytes
from benchmarks.models import Run
from benchmarks.profiles import BUILT_IN
from pools.models import Dataset


def run_list(*, host, limit: int = 50) -> list[Run]:
    return list(Run.objects.filter(host=host).select_related("created_by").defer("raw", "series")[:limit])


def run_targets(*, host) -> list[str]:
    """Mounted filesystems of the host (a run makes its scratch dataset under one)."""
    names = Dataset.objects.filter(host=host, type="filesystem").exclude(mountpoint__in=["", "none", "legacy"])
    return list(names.order_by("name").values_list("name", flat=True)[:500])


def storage_profiles():
    return [p for p in BUILT_IN if p.jobs]


def run_charts(run: Run) -> dict:
    """Chart data: bandwidth over time per job (MiB/s per second, read and write), and latency percentiles."""
    timeline = {"type": "line", "labels": [], "datasets": [], "unit": "MiB/s"}
    for n, points in enumerate(run.series):
        for direction, label in ((0, "read"), (1, "write")):
            values = [round(p[1] / 1024, 1) for p in points if p[2] == direction]
            if values:
                timeline["labels"] = timeline["labels"] or list(range(1, len(values) + 1))
                timeline["datasets"].append({"label": f"{run.jobs[n]['name']} {label}", "data": values})
    latency = {"type": "bar", "labels": ["p50", "p95", "p99", "p99.9"], "datasets": [], "unit": "µs"}
    for n, result in enumerate(run.results):
        for direction in ("read", "write"):
            side = result.get(direction)
            if side and side.get("p50_ns"):
                data = [round((side[k] or 0) / 1000, 1) for k in ("p50_ns", "p95_ns", "p99_ns", "p999_ns")]
                latency["datasets"].append({"label": f"{result.get('job', n + 1)} {direction}", "data": data})
    return {"timeline": timeline, "latency": latency}


def run_warnings(run: Run) -> list[str]:
    """What makes this result less than it seems (shown beside it)."""
    warnings = []
    arc_max = (run.manifest or {}).get("arc_c_max") or 0
    working = max((size_bytes(j["size"]) * j.get("numjobs", 1) for j in run.jobs
                   if j.get("size")), default=0)  # fmt: skip
    if arc_max and working and working < 2 * arc_max:
        warnings.append(
            f"The working set ({working >> 20} MiB) is smaller than twice the ARC's maximum ({arc_max >> 20} MiB): "
            "reads may come from RAM, not the disks."
        )
    if any(j.get("iodepth", 1) > 1 and j.get("ioengine") in ("psync", "sync") for j in run.jobs):
        warnings.append("A queue depth above 1 with a synchronous engine runs at queue depth 1.")
    return warnings


METRICS = (("bw_bytes", "Bandwidth (MB/s)", 1e6, True), ("iops", "IOPS", 1, True), ("p99_ns", "p99 latency (µs)", 1e3,
           False))  # fmt: skip


def run_compare(*, run_ids: list[int], host) -> dict:
    """Runs side by side: per job, direction and metric, each run's value and its difference from the first in
    percent (better or worse: more bandwidth and IOPS is better, more latency is worse)."""
    runs = {r.pk: r for r in Run.objects.filter(host=host, pk__in=run_ids[:8], status="succeeded")}
    runs = [runs[i] for i in run_ids if i in runs]
    rows, chart = [], {"type": "bar", "labels": [], "datasets": [], "unit": "MB/s"}
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
                {"value": v, "diff": (v / base - 1) * 100 if v is not None and base else None,
                 "better": v is not None and base and ((v > base) == higher_better) and v != base}
                for v in values
            ]  # fmt: skip
            rows.append({"job": job, "direction": direction, "metric": label, "cells": cells})
    chart["labels"] = [f"{job} {direction}" for job, direction in keys]
    for run in runs:
        data = []
        for job, direction in keys:
            side = next((r.get(direction) for r in run.results if r.get("job") == job), None)
            data.append(round(side["bw_bytes"] / 1e6, 1) if side else None)
        chart["datasets"].append({"label": f"#{run.pk} {run.created_at:%Y-%m-%d %H:%M}", "data": data})
    return {"runs": runs, "rows": rows, "chart": chart}
