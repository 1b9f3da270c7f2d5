"""Issue 12 figures: the same fio job by hand and through Tarn on the same target in the lab, interleaved 5x
(bandwidth ratio, added wall time); and a run page holding 3,600 one-second points (p95 under light load)."""

import statistics
import time
from dataclasses import replace

from tests.perf.foundation import admin_session_cookie, lab_host, run_operations_inline, tarn_served, wrk

ROUNDS = 5
RUNTIME = 5


def fio_figures():
    found = lab_host("benchmark")
    if found is None:
        return
    lab, host = found
    run_operations_inline()
    from appliance.connect import transport_for
    from benchmarks import services
    from benchmarks.models import Run
    from benchmarks.profiles import PROFILES
    from hostlib import fio
    from pools.services import inventory_refresh

    lab.sh("zpool create -f tank /dev/disk/by-id/virtio-zfsdisk1 && zfs create tank/data")
    inventory_refresh(host=host)
    t = transport_for(host)
    # Exactly the job Tarn runs for the profile (its 10 s ramp included), with the same size and runtime.
    job = replace(PROFILES["seq-write-1"].jobs[0], size="128m", runtime=RUNTIME)
    hand_bw, tarn_bw, hand_wall, tarn_wall = [], [], [], []
    for i in range(ROUNDS):  # interleaved: the emulated guest's drift hits both alike
        props = " ".join(f"-o {k}={v}" for k, v in PROFILES["seq-write-1"].properties.items())  # the profile's too
        lab.sh(f"zfs create -o compression=off -o atime=off {props} tank/data/hand{i}")
        argv = fio.argv(
            job, f"/tank/data/hand{i}", output=f"/tank/data/hand{i}/r.json", bw_log=f"/tank/data/hand{i}/bw"
        )
        started = time.monotonic()
        t.run(argv, mutating=True, timeout=300)
        hand_wall.append(time.monotonic() - started)
        hand_bw.append(fio.parse_result(t.run(["cat", f"/tank/data/hand{i}/r.json"]).stdout).write.bw_bytes)
        lab.sh(f"zfs destroy -r tank/data/hand{i}")

        started = time.monotonic()
        run = services.benchmark_start(
            host=host,
            user=None,
            profile="seq-write-1",
            dataset="tank/data",
            size="128m",
            runtime=RUNTIME,
            cache_ok=True,
        )
        tarn_wall.append(time.monotonic() - started)
        run = Run.objects.get(pk=run.pk)
        assert run.status == "succeeded", run.message
        tarn_bw.append(run.results[0]["write"]["bw_bytes"])
    ratio = statistics.median(tarn_bw) / statistics.median(hand_bw)
    yield "fio_by_hand_bw", statistics.median(hand_bw) / 2**20, "MiB/s", f"median of {ROUNDS}, 10 s ramp + {RUNTIME} s"
    yield "fio_through_tarn_bw", statistics.median(tarn_bw) / 2**20, "MiB/s", f"median of {ROUNDS}"
    yield "fio_tarn_to_hand_bw_ratio", ratio, "x", "goal >= 0.97"
    added = statistics.median(tw - hw for tw, hw in zip(tarn_wall, hand_wall, strict=True))
    yield "fio_tarn_added_wall_time", added, "s", "goal <= 2 s (scratch dataset, manifest, following, clean-up)"
    lab.reset()


def run_page_figures():
    cookie = admin_session_cookie()
    from appliance.models import Host
    from benchmarks.models import Run

    host = Host.objects.get(name="local")
    series = [[1000 * (s + 1), 150_000 + s % 97, d] for s in range(3600) for d in (0, 1)]
    side = {
        "bw_bytes": 1.5e8,
        "iops": 1.8e4,
        "io_bytes": 1,
        "runtime_ms": 3_600_000,
        "lat_mean_ns": 4e5,
        "p50_ns": 1e5,
        "p95_ns": 7e5,
        "p99_ns": 2.4e6,
        "p999_ns": 8e6,
    }
    run = Run.objects.create(
        host=host,
        profile="randrw-8k",
        title="Random 67/33 read/write 8k, one hour",
        target="tank/data",
        outcome="succeeded",
        jobs=[{"name": "randrw-8k", "size": "64g"}],
        results=[{"job": "randrw-8k", "read": side, "write": side}],
        series=[series],
        manifest={"argv": [["fio", "--name=randrw-8k"]], "arc_c_max": 1 << 30},
    )
    with tarn_served() as base:
        p95, _, errors = wrk(f"{base}/benchmarks/runs/{run.pk}/", cookie, clients=5, pause_ms=500, seconds=20)
    yield "benchmark_run_page_3600_points_p95", p95, "ms", "goal <= 150 ms (5 clients)"
    yield "benchmark_run_page_failed_requests", errors, "count", "goal 0"


def l2arc_figures():
    """The ZFSBuild/Nexenta seed's curve: the L2ARC warm-up profile on a pool with a cache disk, the ARC capped at
    128 MiB so a 192 MiB working set exceeds it, and the L2ARC's feed raised so it fills within a few passes (at
    the default 8 MiB/s the curve is the same, only slower)."""
    found = lab_host("L2ARC warm-up")
    if found is None:
        return
    lab, host = found
    run_operations_inline()
    from benchmarks import services
    from benchmarks.models import Run
    from pools.services import inventory_refresh
    from tuning.services import kernel_refresh

    disk = "/dev/disk/by-id/virtio-zfsdisk{}".format
    lab.sh(f"zpool create -f tank {disk(1)} cache {disk(2)} && zfs create tank/data")
    params = "/sys/module/zfs/parameters"
    lab.sh(
        f"echo {128 << 20} > {params}/zfs_arc_max && echo {64 << 20} > {params}/l2arc_write_max && "
        f"echo {64 << 20} > {params}/l2arc_write_boost"
    )
    inventory_refresh(host=host)
    kernel_refresh(host=host)
    run = services.benchmark_start(
        host=host, user=None, profile="l2arc-warmup", dataset="tank/data", size="192m", runtime=10
    )
    run = Run.objects.get(pk=run.pk)
    assert run.status == "succeeded", run.message
    bw = [r["read"]["bw_bytes"] / 2**20 for r in run.results]
    hits = [r["cache"]["l2_hit_pct"] or 0 for r in run.results]
    curve = ", ".join(f"{b:.0f}" for b in bw)
    yield "l2arc_pass1_read_bw", bw[0], "MiB/s", "ARC 128 MiB, working set 192 MiB, 8 passes of 10 s"
    yield "l2arc_pass8_read_bw", bw[-1], "MiB/s", f"every pass: {curve}"
    yield "l2arc_pass8_to_pass1", bw[-1] / bw[0], "x", "the warm-up's gain"
    yield "l2arc_hit_pct_pass1", hits[0], "%", "L2ARC hits among ARC misses, that pass alone"
    yield "l2arc_hit_pct_pass8", hits[-1], "%", "every pass: " + ", ".join(f"{h:.0f}" for h in hits)
    lab.reset()


CHECKS = [fio_figures, run_page_figures, l2arc_figures]
