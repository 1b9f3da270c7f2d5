"""Writes for benchmarks: a run is planned and checked here (profile, target, size against free space), then run
by an Operation on the host's bench queue (one at a time per host). fio runs on the host as a transient systemd
unit, so a worker restart neither kills nor orphans it; the worker follows it, records a manifest, the results and
the per-second series, and always removes its scratch dataset."""

import time
from dataclasses import asdict, replace

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from appliance.connect import transport_for
from appliance.host import fio, systemd, zfs
from appliance.host.errors import HostError
from appliance.host.runner import Transport
from appliance.models import Host
from appliance.operations import Tracker, operation_runner, operation_start
from benchmarks.choices import BANDWIDTH_EVERY, FREE_SPACE_SHARE, POLL_SECONDS, RunStatus
from benchmarks.models import Run
from benchmarks.profiles import PROFILES
from pools.models import Dataset
from tuning.models import ChangeSet, Link


def benchmark_start(*, host: Host, user, profile: str, dataset: str, size: str = "", runtime: int = 0) -> Run:
    """size / runtime: override every job's (a quick run, or a working set sized to the pool)."""
    chosen = PROFILES.get(profile)
    if chosen is None or not chosen.jobs:
        raise ValidationError({"profile": "Choose one of the storage profiles."})
    target = Dataset.objects.filter(host=host, name=dataset, type="filesystem").first()
    if target is None or not target.mountpoint.startswith("/"):
        raise ValidationError({"dataset": f"{host.name} has no mounted filesystem {dataset}."})
    jobs = [replace(j, **({"size": size} if size else {}), **({"runtime": runtime} if runtime else {}))
            for j in chosen.jobs]  # fmt: skip
    for job in jobs:
        problems = fio.problems(job)
        if problems:
            raise ValidationError(problems)
    return _queue(host, user, profile, chosen.title, dataset, jobs, available=target.available)


def _queue(host: Host, user, profile: str, title: str, dataset: str, jobs: list, available: int | None = None) -> Run:
    if available is None:
        target = Dataset.objects.filter(host=host, name=dataset, type="filesystem").first()
        if target is None:
            raise ValidationError({"dataset": f"{host.name} has no filesystem {dataset} any more."})
        available = target.available
    need = max(fio.size_bytes(j.size) * j.numjobs for j in jobs)
    if need > available * FREE_SPACE_SHARE:
        raise ValidationError(
            {"size": f"{need >> 20} MiB would use more than half of {dataset}'s free {available >> 20} MiB."}
        )
    with transaction.atomic():
        run = Run.objects.create(host=host, profile=profile, title=title, target=dataset, created_by=user,
                                 jobs=[asdict(j) for j in jobs])  # fmt: skip
        run.operation = operation_start(
            kind="benchmark.run", target=f"host:{host.name}:benchmark", host=host, user=user,
            params={"run": run.pk}, queue=host.bench_queue,
        )  # fmt: skip
        run.save(update_fields=["operation"])
    return run


def benchmark_again(*, run: Run, user) -> Run:
    """Run again exactly what a run ran (its jobs, on its target), checked again against the free space now."""
    jobs = [fio.FioJob(**j) for j in run.jobs]
    return _queue(run.host, user, run.profile, run.title, run.target, jobs)


def benchmark_cancel(*, run: Run, user) -> None:
    """The running worker stops the unit and cleans up at its next look (within a few seconds)."""
    if not run.is_active:
        raise ValidationError({"run": "This run is not running."})
    Run.objects.filter(pk=run.pk).update(cancel_requested=True)


def _manifest(t: Transport, run: Run, mountpoint: str) -> dict:
    arc = zfs.parse_arcstats(t.run(["cat", "--", zfs.ARCSTATS], check=False).stdout)
    props = t.run(["zfs", "get", "-H", "-p", "-o", "property,value", "all", "--", run.scratch], check=False).stdout
    return {
        "fio": t.run(["fio", "--version"], check=False).stdout.strip(),
        "openzfs": t.run(["zfs", "version"], check=False).stdout.split("\n")[0],
        "kernel": t.run(["uname", "-r"], check=False).stdout.strip(),
        "arc_c_max": arc.get("c_max"),
        "arc_size": arc.get("size"),
        "dataset": run.scratch,
        "mountpoint": mountpoint,
        "dataset_properties": dict(line.split("\t", 1) for line in props.splitlines() if "\t" in line),
        "mtu": {x.name: x.mtu for x in Link.objects.filter(host=run.host).exclude(kind="loopback")},
        "tuning": list(ChangeSet.objects.filter(host=run.host, status__in=["applied", "kept"]).values_list("title", flat=True)),
        "argv": [],
    }  # fmt: skip


@operation_runner("benchmark.run")
def benchmark_run(tracker: Tracker) -> None:
    run = Run.objects.get(pk=tracker.op.params["run"])
    t = transport_for(run.host, user=tracker.op.user, operation=tracker.op)
    unit = f"tarn-bench-{run.pk}"
    Run.objects.filter(pk=run.pk).update(status=RunStatus.RUNNING)
    created = False
    try:
        tracker.progress(2, f"Making the scratch dataset {run.scratch}")
        t.run(zfs.create_argv(run.scratch, {"compression": "off", "atime": "off"}), mutating=True, timeout=120)
        created = True
        mountpoint = t.run(["zfs", "get", "-H", "-o", "value", "mountpoint", "--", run.scratch]).stdout.strip()
        run.manifest = _manifest(t, run, mountpoint)
        jobs = [fio.FioJob(**j) for j in run.jobs]
        total = sum(j.runtime + j.ramp for j in jobs)
        done = 0
        for n, job in enumerate(jobs):
            output, bw_log = f"{mountpoint}/result-{n}.json", f"{mountpoint}/bw-{n}"
            argv = fio.argv(job, mountpoint, output=output, bw_log=bw_log)
            run.manifest["argv"].append(argv)
            Run.objects.filter(pk=run.pk).update(manifest=run.manifest)
            systemd.start(t, unit, argv, description=f"Tarn benchmark {run.pk}: {run.title}")
            if not _follow(t, run, unit, job, bw_log, tracker, done, total):
                return
            done += job.runtime + job.ramp
            text = t.run(["cat", "--", output], timeout=60).stdout
            run.results.append({"job": job.name, **fio.parse_result(text).as_dict()})
            run.series.append(fio.parse_bw_log(t.run(["cat", "--", f"{bw_log}_bw.1.log"], check=False).stdout))
            run.raw = text[-200_000:]
            Run.objects.filter(pk=run.pk).update(results=run.results, series=run.series, raw=run.raw)
        _finish(run, RunStatus.SUCCEEDED, f"{len(jobs)} job{'s' * (len(jobs) != 1)} done.")
        tracker.progress(100, run.message)
    except (HostError, ValueError) as exc:
        _finish(run, RunStatus.FAILED, str(exc))
        raise HostError(str(exc)) from None
    finally:
        systemd.stop(t, unit)
        systemd.reset_failed(t, unit)
        if created:
            t.run(zfs.destroy_argv(run.scratch, recursive=True), mutating=True, check=False, timeout=300)


def _follow(t, run, unit, job, bw_log, tracker, done, total) -> bool:
    """Until the unit ends: progress from the elapsed time, current bandwidth from the per-second log. False when
    the run was cancelled (the caller cleans up)."""
    started, polls, current = time.monotonic(), 0, {"job": job.name, "bytes_s": 0}
    while True:
        time.sleep(POLL_SECONDS)
        polls += 1
        state, result = systemd.service_state(t, unit)
        if Run.objects.filter(pk=run.pk, cancel_requested=True).exists():
            systemd.stop(t, unit)
            _finish(run, RunStatus.CANCELLED, "Cancelled; its files are removed.")
            tracker.progress(100, run.message)
            return False
        if state in ("inactive", "failed"):
            if result not in ("", "success"):
                raise HostError(f"fio ended with {result}; see the host's journal for {unit}")
            return True
        if polls % BANDWIDTH_EVERY == 1:  # every command costs the host CPU fio is measuring: read it now and then
            points = fio.parse_bw_log(t.run(["cat", "--", f"{bw_log}_bw.1.log"], check=False).stdout)
            last = points[-1][0] // 1000 if points else -1  # read and write each log a line per second
            current["bytes_s"] = 1024 * sum(p[1] for p in points if p[0] // 1000 == last)
        elapsed = min(time.monotonic() - started, job.runtime + job.ramp)
        percent = int(100 * (done + elapsed) / max(total, 1))
        Run.objects.filter(pk=run.pk).update(progress=percent, current=current)
        tracker.progress(min(percent, 99), f"{job.name}: {current['bytes_s'] >> 20} MiB/s")


def _finish(run: Run, status: str, message: str) -> None:
    run.status, run.message, run.finished_at = status, message[:1000], timezone.now()
    Run.objects.filter(pk=run.pk).update(status=status, message=run.message, finished_at=run.finished_at,
                                         progress=100 if status == RunStatus.SUCCEEDED else run.progress)  # fmt: skip


def runs_reconcile() -> int:
    """Beat: a run whose operation ended without it (the worker following it was killed and reaped, or its queued
    message was lost) is ended failed, and its unit and scratch dataset are removed on the host."""
    orphans = Run.objects.filter(status__in=RunStatus.active(), operation__status__in=["failed", "succeeded"])
    count = 0
    for run in orphans.select_related("host"):
        _finish(run, RunStatus.FAILED, "The worker following this run stopped; Tarn ended it and removed its files.")
        operation_start(kind="benchmark.cleanup", target=f"host:{run.host.name}:benchmark-cleanup:{run.pk}",
                        host=run.host, user=None, params={"run": run.pk})  # fmt: skip
        count += 1
    return count


@operation_runner("benchmark.cleanup")
def benchmark_cleanup_run(tracker: Tracker) -> None:
    run = Run.objects.get(pk=tracker.op.params["run"])
    t = transport_for(run.host, operation=tracker.op)
    unit = f"tarn-bench-{run.pk}"
    systemd.stop(t, unit)
    systemd.reset_failed(t, unit)
    t.run(zfs.destroy_argv(run.scratch, recursive=True), mutating=True, check=False, timeout=300)
    tracker.progress(100, f"Stopped {unit} and removed {run.scratch}.")
