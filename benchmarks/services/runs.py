"""Storage runs: a profile's fio jobs on a dataset, planned and checked here (profile, target, properties, size
against free space and the ARC), then run by an Operation on the host's bench queue (one at a time per host). fio
runs on the host as a transient systemd unit, so a worker restart neither kills nor orphans it; the worker follows
it, records a manifest, the results and the per-second series, and always removes its scratch dataset."""

import time
from dataclasses import asdict, replace

from django.core.exceptions import ValidationError
from django.db import transaction

from appliance.choices import RunStatus
from appliance.models import Host
from appliance.operations import Tracker, operation_runner
from benchmarks.choices import BANDWIDTH_EVERY, FREE_SPACE_SHARE, PROPERTIES, RAMP_ENOUGH, RunKind
from benchmarks.models import Run
from benchmarks.selectors import storage_profile
from benchmarks.services import targets
from benchmarks.services.common import (
    BENCHMARK,
    begin,
    bench_operation,
    cancelled,
    finish,
    follow_unit,
    manifest_common,
)
from hostlib import facts, fio, kernel, posix, systemd, zfs, zpool
from hostlib.errors import HostError
from hostlib.runner import Transport
from pools.selectors import cache_bytes, mounted_filesystem
from tuning.selectors import host_arc


def benchmark_start(
    *,
    host: Host,
    user,
    profile: str,
    dataset: str,
    size: str = "",
    runtime: int = 0,
    ramp: int | None = None,
    properties: dict | None = None,
    cache_ok: bool = False,
    suite=None,
    schedule=None,
    queue: bool = True,
) -> Run:
    """size / runtime / ramp: override every job's (a quick run, or a working set sized to the pool); properties:
    the scratch dataset's (recordsize, sync…); cache_ok: run although the working set fits in the ARC; queue=False:
    checked and saved, run by a suite's operation."""
    chosen = storage_profile(profile)
    if chosen is None:
        raise ValidationError({"profile": "Choose one of the storage profiles."})
    jobs = check_jobs(chosen, size=size, runtime=runtime, ramp=ramp)
    run = Run(
        host=host,
        profile=profile,
        title=chosen.title,
        target=dataset,
        created_by=user,
        suite=suite,
        schedule=schedule,
        cache_ok=cache_ok,
        jobs=[asdict(j) for j in jobs],
        properties={**chosen.properties, **check_properties(properties or {})},
    )
    return queue_storage(run, queue=queue)


def check_jobs(profile, *, size: str, runtime: int, ramp: int | None) -> list[fio.FioJob]:
    """The profile's jobs with the overrides, each field checked (a 400 naming the first wrong one)."""
    overrides = {k: v for k, v in (("size", size), ("runtime", runtime)) if v}
    if ramp is not None:
        overrides["ramp"] = ramp
    jobs = [replace(j, **overrides) for j in profile.jobs]
    for job in jobs:
        problems = fio.problems(job)
        if problems:
            raise ValidationError(problems)
    return jobs


def check_properties(properties: dict) -> dict:
    for name, value in properties.items():
        if name not in PROPERTIES:
            raise ValidationError({"properties": f"{name} is not a property a run may set ({', '.join(PROPERTIES)})."})
        if value not in PROPERTIES[name]:
            raise ValidationError({"properties": f"{name}: one of {', '.join(PROPERTIES[name])}."})
    return dict(properties)


def duration(jobs: list[dict]) -> int:
    """Seconds the jobs measure (runtime and ramp), for the operation's time limit (an L2ARC warm-up runs hours)."""
    return sum(j.get("runtime", 0) + j.get("ramp", 0) for j in jobs)


def working_set(jobs: list[dict]) -> int:
    """The largest job's bytes (all its files, all its processes)."""
    return max((fio.size_bytes(j["size"]) * j.get("numjobs", 1) for j in jobs), default=0)


def queue_storage(run: Run, queue: bool = True) -> Run:
    """Checks against the host as last read (target, free space, ARC), then the row and its operation together."""
    host = run.host
    target = mounted_filesystem(host=host, name=run.target)
    if target is None:
        raise ValidationError({"dataset": f"{host.name} has no mounted filesystem {run.target}."})
    need = working_set(run.jobs)
    if need > target.available * FREE_SPACE_SHARE:
        raise ValidationError(
            {"size": f"{need >> 20} MiB would use more than half of {run.target}'s free {target.available >> 20} MiB."}
        )
    arc_max = host_arc(host=host).get("c_max", 0)
    profile = storage_profile(run.profile)
    if profile is not None and profile.warm:
        check_warm_up(run, need, arc_max)
    elif arc_max and need < 2 * arc_max and not run.cache_ok:
        raise ValidationError(
            {
                "size": f"{need >> 20} MiB is less than twice the ARC's maximum ({arc_max >> 20} MiB): this would "
                "measure RAM. Use a size of at least "
                f"{(2 * arc_max >> 30) + 1}g, or allow a cached working set (measuring the cache)."
            }
        )
    if not queue:
        run.save()
        return run
    with transaction.atomic():
        run.save()
        run.operation = bench_operation("benchmarks.run", host, run.created_by, {"run": run.pk}, duration(run.jobs))
        run.save(update_fields=["operation"])
    return run


def check_warm_up(run: Run, need: int, arc_max: int) -> None:
    """A cache warm-up measures the L2ARC: its pool needs a cache vdev, and the working set must be larger than the
    ARC (else the ARC serves every pass) and fit in ARC + L2ARC (else no pass can be served from cache)."""
    pool = run.target.split("/")[0]
    cache = cache_bytes(host=run.host, pool=pool)
    if not cache:
        raise ValidationError(
            {"profile": f"Pool {pool} has no cache (L2ARC) vdev: add one on the pool's page to measure its warm-up."}
        )
    if arc_max and not arc_max < need < arc_max + cache:
        low, high = (arc_max >> 20) + 1, (arc_max + cache >> 20) - 1
        raise ValidationError(
            {
                "size": f"The working set ({need >> 20} MiB) must be larger than the ARC's maximum ({arc_max >> 20} "
                f"MiB) and smaller than ARC + L2ARC ({(arc_max + cache) >> 20} MiB): a size from {low}m to {high}m."
            }
        )


def _manifest(t: Transport, run: Run, where: dict, now: facts.Now, warm: bool) -> dict:
    """The host's part (fio's version comes with fio's first result: the fio that ran, no command for it). The
    dataset's encryption is read with its properties; the kernel's AES and GCM implementations (an encrypted
    dataset is several times slower with the generic ones) are the host's facts as last read (every few minutes)."""
    pool = run.target.split("/")[0]
    return {
        **manifest_common(t, run, now),
        **where,
        "encryption": targets.encryption_of(where.get("dataset_properties") or {}),
        "aes_impl": (run.host.facts or {}).get("aes_impl", ""),
        "gcm_impl": (run.host.facts or {}).get("gcm_impl", ""),
        "pool_topology": zpool.topology_text(t, pool)[-20_000:],
        "caches_dropped": "once" if warm else True,
    }


@operation_runner("benchmarks.run", lock=BENCHMARK, queue="bench")
def benchmark_run(tracker: Tracker) -> None:
    execute_storage(Run.objects.select_related("host").get(pk=tracker.op.params["run"]), tracker)


def execute_storage(run: Run, tracker: Tracker) -> None:
    """Run a storage run's jobs on its host; the run ends succeeded, failed (HostError raised) or cancelled. The
    manifest's reads (a handful of commands) are made while nothing is measured: during the first job's layout or
    ramp when it has one."""
    t = tracker.transport()
    unit = f"tarn-bench-{run.pk}"
    begin(run)
    files, live = [], False  # live: a unit started and not seen ending well
    try:
        what = "dataset" if run.kind == RunKind.STORAGE else "folder"
        tracker.progress(2, f"Making the scratch {what} for {run.target}")
        directory, out, where = targets.prepare(t, run)
        now = facts.now(t)
        arc_max = now.arc.get("c_max") or 0
        profile = storage_profile(run.profile)
        warm = profile is not None and profile.warm  # passes over the same files: the caches stay between them
        if arc_max and working_set(run.jobs) < 2 * arc_max and not run.cache_ok and not warm:
            raise HostError(f"The working set is less than twice the ARC's maximum ({arc_max >> 20} MiB) now.")
        run.manifest = {"argv": []}
        jobs = [fio.FioJob(**j) for j in run.jobs]
        total = sum(j.runtime + j.ramp for j in jobs)
        done = 0

        def read_manifest() -> None:  # once, at the first moment nothing is measured
            if "kernel" not in run.manifest:
                run.manifest = {**_manifest(t, run, where, now, warm), "argv": run.manifest["argv"]}

        for n, job in enumerate(jobs):
            output, bw_log, made = targets.output_files(run, out, n, job.numjobs)
            files += made
            if fio.reads(job) and not (warm and n):  # lay out, then drop the caches: reads come from the disks
                tracker.progress(int(100 * done / max(total, 1)), f"{job.name}: laying out the files")
                run.manifest["argv"].append(fio.layout_argv(job, directory))
                systemd.start(
                    t,
                    unit,
                    run.manifest["argv"][-1],
                    description=f"Tarn benchmark {run.pk}: layout",
                    writable=(directory, out),
                )
                live = True
                read_manifest()  # while the files are laid out
                if not follow_unit(t, run, unit):
                    return cancelled(run, tracker)
                live = False
                kernel.write(t, "sysctl", "vm.drop_caches", "3")
            if job.ramp < RAMP_ENOUGH:  # too short a ramp to read it in: before fio starts
                read_manifest()
            argv = fio.argv(job, directory, output=output, bw_log=bw_log)
            run.manifest["argv"].append(argv)
            posix.only_regular_files(t, directory)  # the tripwire before each pass
            systemd.start(t, unit, argv, description=f"Tarn benchmark {run.pk}: {run.title}", writable=(directory, out))
            live = True
            read_manifest()  # during the ramp, which is not measured
            Run.objects.filter(pk=run.pk).update(manifest=run.manifest)
            before = zfs.arcstats(t) if warm else {}
            if not _follow(t, run, unit, job, bw_log, tracker, done, total):
                return cancelled(run, tracker)
            live = False
            done += job.runtime + job.ramp
            both = posix.cat(t, output, f"{bw_log}_bw.1.log", timeout=60)  # one command
            text, log = fio.split_output(both)
            parsed = fio.parse_result(text)
            result = {"job": f"pass {n + 1}" if warm else job.name, **parsed.as_dict()}
            if warm:
                result["cache"] = cache_pass(before, zfs.arcstats(t))
            run.manifest.setdefault("fio", parsed.version)
            run.results.append(result)
            run.series.append(fio.parse_bw_log(log))
            run.raw = text[-200_000:]
            Run.objects.filter(pk=run.pk).update(
                results=run.results, series=run.series, raw=run.raw, manifest=run.manifest
            )
        finish(run, RunStatus.SUCCEEDED, f"{len(jobs)} job{'s' * (len(jobs) != 1)} done.")
        tracker.progress(100, run.message)
    except (HostError, ValueError) as exc:
        finish(run, RunStatus.FAILED, str(exc))
        raise HostError(str(exc)) from None
    finally:
        if live:  # cancelled, failed or interrupted: stop it, and forget a failed unit
            systemd.stop(t, unit)
            systemd.reset_failed(t, unit)
        targets.cleanup(t, run, files)


def cache_pass(before: dict, after: dict) -> dict:
    """One pass's cache figures from the arcstats before and after it: the ARC's and the L2ARC's hit ratio (%)
    over that pass alone, and the L2ARC's size at its end."""

    def ratio(hits: str, misses: str) -> float | None:
        h, m = (after.get(k, 0) - before.get(k, 0) for k in (hits, misses))
        return round(100 * h / (h + m), 1) if h + m > 0 else None

    return {
        "arc_hit_pct": ratio("hits", "misses"),
        "l2_hit_pct": ratio("l2_hits", "l2_misses"),
        "l2_size": after.get("l2_size", 0),
    }


def _follow(t, run, unit, job, bw_log, tracker, done, total) -> bool:
    """Until the unit ends: progress from the elapsed time, current bandwidth from the per-second log. False when
    the run was cancelled (the caller cleans up)."""
    started, current = time.monotonic(), {"job": job.name, "bytes_s": 0}

    def on_poll(polls: int) -> None:
        if polls % BANDWIDTH_EVERY == 2:  # every command costs the host CPU fio is measuring: read it now and then
            points = fio.parse_bw_log(posix.cat(t, f"{bw_log}_bw.1.log"))
            last = points[-1][0] // 1000 if points else -1  # read and write each log a line per second
            current["bytes_s"] = 1024 * sum(p[1] for p in points if p[0] // 1000 == last)
        elapsed = min(time.monotonic() - started, job.runtime + job.ramp)
        percent = int(100 * (done + elapsed) / max(total, 1))
        Run.objects.filter(pk=run.pk).update(progress=percent, current=current)
        tracker.progress(min(percent, 99), f"{job.name}: {current['bytes_s'] >> 20} MiB/s")

    return follow_unit(t, run, unit, on_poll, expected=job.runtime + job.ramp)
