"""Runs of any kind: run again from the manifest, cancel, and the clean-up after a run whose worker died."""

from django.core.exceptions import ValidationError

from appliance.models import Operation
from appliance.operations import TargetBusy, Tracker, operation_reaped, operation_runner, operation_start
from benchmarks.choices import RunKind
from benchmarks.models import Run
from benchmarks.services import targets
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
    together.filter(outcome="").update(cancel_requested=True)


@operation_reaped("benchmarks.run", "benchmarks.network", "benchmarks.suite")
def runs_reaped(op: Operation) -> None:
    """The worker following the operation's runs died, and the reaper failed it (so its runs read failed, from it):
    the run it had begun gets its unit stopped and its scratch dataset (or folder and mount) removed on the host."""
    for run in Run.objects.filter(operation=op, outcome="", started_at__isnull=False).select_related("host"):
        said = "The worker following this run stopped; Tarn removes its unit and files."
        if run.host.read_only:  # marked so since it started: nothing is removed there (operation_start refuses)
            said = f"The worker following this run stopped. {run.host.name} is read-only in Tarn: its unit and "
            said += "scratch dataset stay."
        else:
            try:
                operation_start(
                    kind="benchmarks.cleanup", subject=run.pk, host=run.host, user=None, params={"run": run.pk}
                )
            except TargetBusy:
                pass  # a clean-up of it is under way already
        Run.objects.filter(pk=run.pk).update(message=said)


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
