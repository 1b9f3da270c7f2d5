"""Reads for benchmarks: runs of a host, one run with its chart data, the datasets a run may target."""

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
    sizes = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    working = max((int(j["size"][:-1]) * sizes[j["size"][-1]] * j.get("numjobs", 1) for j in run.jobs
                   if j.get("size")), default=0)  # fmt: skip
    if arc_max and working and working < 2 * arc_max:
        warnings.append(
            f"The working set ({working >> 20} MiB) is smaller than twice the ARC's maximum ({arc_max >> 20} MiB): "
            "reads may come from RAM, not the disks."
        )
    if any(j.get("iodepth", 1) > 1 and j.get("ioengine") in ("psync", "sync") for j in run.jobs):
        warnings.append("A queue depth above 1 with a synchronous engine runs at queue depth 1.")
    return warnings
