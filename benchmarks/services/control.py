"""Runs of any kind: run again from the manifest, cancel, and the reconciler that ends runs whose worker died."""

from django.core.exceptions import ValidationError

from appliance.choices import OperationStatus
from appliance.operations import Tracker, operation_runner, operation_start
from benchmarks.choices import RunKind, RunStatus
from benchmarks.models import Run
from benchmarks.services import targets
from benchmarks.services.common import finish
from benchmarks.services.network import queue_network
from benchmarks.services.runs import queue_storage
from benchmarks.services.shares import check_share
from hostlib import iperf, systemd


def benchmark_again(*, run: Run, user) -> Run:
    """Run again exactly what a run ran (its jobs and properties, on its target), checked again against the host."""
    again = Run(
        host=run.host,
        kind=run.kind,
        profile=run.profile,
        title=run.title,
        target=run.target,
        jobs=run.jobs,
        share=run.share,
        properties=run.properties,
        cache_ok=run.cache_ok,
        peer=run.peer,
        created_by=user,
    )
    if run.share:  # the share may have changed since (users, clients, read-only, gone): the same checks again
        check_share(host=run.host, protocol=run.kind, share=run.share)
    return queue_network(again) if run.kind == RunKind.NETWORK else queue_storage(again)


def benchmark_cancel(*, run: Run, user) -> None:
    """The running worker stops the unit and cleans up at its next look (within a few seconds); in a suite, the
    suite's runs still to come are cancelled too."""
    if not run.is_active:
        raise ValidationError({"run": "This run is not running."})
    together = Run.objects.filter(suite_id=run.suite_id) if run.suite_id else Run.objects.filter(pk=run.pk)
    together.filter(status__in=RunStatus.active()).update(cancel_requested=True)


def runs_reconcile() -> int:
    """Beat: a run whose operation ended without it (the worker following it was killed and reaped, or its queued
    message was lost) is ended failed, and its unit and scratch dataset are removed on the host."""
    orphans = Run.objects.filter(
        status__in=RunStatus.active(), operation__status__in=[OperationStatus.FAILED, OperationStatus.SUCCEEDED]
    )
    count = 0
    for run in orphans.select_related("host"):
        if run.host.read_only:  # marked so since it started: nothing is removed there (operation_start refuses)
            ended = f"The worker following this run stopped; Tarn ended it. {run.host.name} is read-only in Tarn:"
            finish(run, RunStatus.FAILED, f"{ended} its unit and scratch dataset stay.")
            count += 1
            continue
        finish(run, RunStatus.FAILED, "The worker following this run stopped; Tarn ended it and removed its files.")
        operation_start(kind="benchmarks.cleanup", subject=run.pk, host=run.host, user=None, params={"run": run.pk})
        count += 1
    return count


@operation_runner("benchmarks.cleanup", lock="benchmark-cleanup")
def benchmark_cleanup_run(tracker: Tracker) -> None:
    run = Run.objects.get(pk=tracker.op.params["run"])
    t = tracker.transport()
    for unit in (f"tarn-bench-{run.pk}", iperf.server_unit(str(run.operation_id))):
        systemd.stop(t, unit)
        systemd.reset_failed(t, unit)
    if run.kind == RunKind.NETWORK:
        return tracker.progress(100, f"Stopped the iperf3 server of run {run.pk}.")
    files = [
        f for n, job in enumerate(run.jobs) for f in targets.output_files(run, targets.RUN_DIR, n, job["numjobs"])[2]
    ]
    targets.cleanup(t, run, files if run.kind != RunKind.STORAGE else [])
    tracker.progress(
        100,
        f"Stopped tarn-bench-{run.pk} and removed its scratch {'dataset' if run.kind == RunKind.STORAGE else 'folder and mount'}.",
    )
