"""Benchmark runs against the lab's real OpenZFS and fio: fio runs on the guest as a transient unit, the run keeps
its manifest, results and series, and its scratch dataset is gone afterwards, also when cancelled."""

import threading
import time
from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError

from appliance.celery import app
from appliance.operations import operations_reap
from benchmarks import services
from benchmarks.models import Run
from pools.services import inventory_refresh
from tests.support.inline import run_when_queued
from tests.support.worker import start_worker, stop_worker

pytestmark = pytest.mark.lab


@pytest.fixture
def tank(guest, lab_host):
    guest.sh("zpool create -f tank /dev/disk/by-id/virtio-zfsdisk1 && zfs create tank/data")
    inventory_refresh(host=lab_host)
    return lab_host


def no_leftovers(guest, run):
    assert run.scratch not in guest.sh("zfs list -H -o name"), "the scratch dataset is removed"
    assert guest.sh("pgrep -x fio || true").strip() == "", "no fio process is left"
    assert "tarn-bench" not in guest.sh("systemctl list-units --all --no-legend 'tarn-bench*' || true")


def test_a_profile_runs_on_the_host_and_its_result_manifest_and_series_are_kept(guest, tank, admin_user, run_queued):
    run = run_queued(services.benchmark_start, host=tank, user=admin_user, profile="randrw-8k", dataset="tank/data",
                     size="16m", runtime=4)  # fmt: skip
    run.refresh_from_db()
    assert run.status == "succeeded", run.message
    result = run.results[0]
    assert result["read"]["iops"] > 0 and result["write"]["iops"] > 0 and result["read"]["p99_ns"] > 0
    assert run.series[0] and {p[2] for p in run.series[0]} == {0, 1}
    m = run.manifest
    assert m["fio"].startswith("fio-3.") and m["openzfs"].startswith("zfs-2.3") and m["arc_c_max"] > 0
    assert m["dataset_properties"]["compression"] == "off" and m["argv"][0][0] == "fio"
    assert "--rw=randrw" in m["argv"][0] and "--runtime=4" in m["argv"][0]
    no_leftovers(guest, run)


@pytest.mark.django_db(transaction=True)
def test_a_cancelled_run_leaves_no_fio_process_and_no_files(guest, tank, admin_user, run_queued):
    def cancel():  # what the page's Cancel does, while the worker follows the run
        for run in Run.objects.filter(status="running"):
            services.benchmark_cancel(run=run, user=admin_user)

    timer = threading.Timer(8, cancel)
    timer.start()
    try:
        run_queued(services.benchmark_start, host=tank, user=admin_user, profile="seq-write-1", dataset="tank/data",
                   size="64m", runtime=120)  # fmt: skip
    finally:
        timer.cancel()
    run = Run.objects.get()
    assert run.status == "cancelled", run.message
    no_leftovers(guest, run)


def test_a_run_that_would_fill_the_pool_is_refused_before_it_starts(tank, admin_user):
    with pytest.raises(ValidationError) as refused:
        services.benchmark_start(host=tank, user=admin_user, profile="seq-write-1", dataset="tank/data", size="64g")
    assert "size" in refused.value.message_dict and not Run.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_a_run_whose_worker_is_killed_ends_failed_and_cleaned_never_stuck(
    guest, tank, admin_user, tmp_path, monkeypatch
):
    worker = start_worker(tank.bench_queue, tmp_path / "worker.log")
    try:
        run = services.benchmark_start(host=tank, user=admin_user, profile="seq-write-1", dataset="tank/data",
                                       size="64m", runtime=120)  # fmt: skip
        deadline = time.monotonic() + 120
        while not Run.objects.filter(pk=run.pk, progress__gt=0).exists():  # fio is running on the guest
            assert time.monotonic() < deadline, (tmp_path / "worker.log").read_text()[-2000:]
            time.sleep(0.5)
    finally:
        stop_worker(worker, sig=9)
    assert guest.sh("pgrep -x fio || true").strip(), "fio outlives the worker: it runs on the host"
    operations_reap(stale_after=timedelta(0))  # what the reaper does once the heartbeat is stale
    monkeypatch.setattr(app, "send_task", run_when_queued)
    assert services.runs_reconcile() == 1
    run.refresh_from_db()
    assert run.status == "failed" and "stopped" in run.message
    no_leftovers(guest, run)
