"""Benchmark runs: bad input is a 400 naming the field and nothing starts; a run's page shows its progress while
it runs and its results, graphs and manifest after (rendered from stored data)."""

from pathlib import Path

import pytest

from appliance.models import Operation
from benchmarks.models import Run
from hostlib import fio

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "host"


def post(client, data):
    return client.post("/api/v1/benchmark-runs/", data, content_type="application/json")


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"profile": "rm-rf", "dataset": "tank/data"}, "profile"),
        ({"profile": "iperf-1", "dataset": "tank/data"}, "profile"),
        ({"profile": "seq-write-1", "dataset": "tank/nope"}, "dataset"),
        ({"profile": "seq-write-1", "dataset": "/dev/sda"}, "dataset"),
        ({"profile": "seq-write-1", "dataset": "tank/data", "size": "30g"}, "size"),  # more than half the free space
        ({"profile": "seq-write-1", "dataset": "tank/data", "size": "1g\nfilename=/dev/sda"}, "size"),
        ({"profile": "seq-write-1", "dataset": "tank/data", "size": "1g:2g"}, "size"),
        ({"profile": "seq-write-1", "dataset": "tank/data", "runtime": -1}, "runtime"),
        ({"profile": "seq-write-1", "dataset": "tank/data", "runtime": 100000}, "runtime"),
    ],
)
def test_bad_input_is_a_400_naming_the_field_and_nothing_runs(operator_client, tank, data, field):
    response = post(operator_client, {"host": tank.name, **data})
    assert response.status_code == 400, response.content
    assert field in response.json(), response.json()
    assert not Run.objects.exists() and not Operation.objects.exists()


def test_a_run_is_queued_on_the_hosts_bench_queue(operator_client, tank):
    response = post(
        operator_client,
        {"host": tank.name, "profile": "randrw-8k", "dataset": "tank/data", "size": "64m", "runtime": 5},
    )
    assert response.status_code == 202, response.content
    run = Run.objects.get(pk=response.json()["id"])
    assert run.status == "queued" and [j["runtime"] for j in run.jobs] == [5] and run.jobs[0]["size"] == "64m"
    assert run.operation.kind == "benchmarks.run" and run.scratch == f"tank/data/tarnbench-{run.pk}"


def test_a_finished_runs_page_shows_results_graphs_and_manifest(admin_client, tank):
    result = fio.parse_result((FIXTURES / "fio_randrw_output.txt").read_text())
    series = fio.parse_bw_log((FIXTURES / "fio_bw.log").read_text())
    run = Run.objects.create(
        host=tank,
        profile="randrw-8k",
        title="Random 67/33 read/write 8k",
        target="tank/data",
        outcome="succeeded",
        jobs=[{"name": "randrw-8k", "size": "32m", "numjobs": 1}],
        results=[{"job": "randrw-8k", **result.as_dict()}],
        series=[series],
        manifest={
            "fio": "fio-3.33",
            "openzfs": "zfs-2.3.2",
            "arc_c_max": 628075520,
            "arc_size": 4029808,
            "dataset_properties": {"compression": "off"},
            "argv": [["fio", "--name=randrw-8k"]],
            "tuning": [],
        },
    )
    page = admin_client.get(f"/benchmarks/runs/{run.pk}/").content.decode()
    assert 'data-chart="timeline-data"' in page and 'data-chart="latency-data"' in page
    assert "fio --name=randrw-8k" in page and "compression off" in page and "randrw-8k</td><td>read" in page
    assert 'id="cancel"' not in page and "hx-trigger" not in page  # finished: no polling, no cancel
    assert "The working set (32 MiB) is smaller than twice the ARC&#x27;s maximum (598 MiB)" in page
    listing = admin_client.get("/benchmarks/").content.decode()
    assert "Random 67/33 read/write 8k" in listing and "tank/data" in listing


def test_a_running_runs_page_polls_and_offers_cancel(operator_client, tank):
    op = Operation.objects.create(kind="benchmarks.run", target="host:local:benchmark", host=tank, status="running")
    run = Run.objects.create(
        host=tank,
        profile="seq-write-1",
        title="Sequential write 1M",
        target="tank/data",
        operation=op,
        started_at=op.created_at,
        progress=40,
        current={"job": "seq-write-1", "bytes_s": 200 << 20},
    )
    page = operator_client.get(f"/benchmarks/runs/{run.pk}/").content.decode()
    assert 'value="40"' in page and 'id="cancel"' in page and "200.0\xa0MB" in page and "hx-trigger" in page
    operator_client.post(f"/benchmarks/runs/{run.pk}/cancel/")
    assert Run.objects.get(pk=run.pk).cancel_requested


def _finished(host, bw, p99, when="2026-11-20"):
    side = {
        "bw_bytes": bw,
        "iops": bw / 8192,
        "io_bytes": 1,
        "runtime_ms": 1,
        "lat_mean_ns": 1,
        "p50_ns": 1,
        "p95_ns": 1,
        "p99_ns": p99,
        "p999_ns": p99,
    }
    return Run.objects.create(
        host=host,
        profile="randrw-8k",
        title="Random 67/33 read/write 8k",
        target="tank/data",
        outcome="succeeded",
        jobs=[{"name": "randrw-8k", "size": "32m"}],
        results=[{"job": "randrw-8k", "read": side, "write": None}],
    )


def test_two_runs_compare_side_by_side_with_differences_in_percent(operator_client, tank):
    before, after = _finished(tank, 100e6, 2_000_000), _finished(tank, 150e6, 3_000_000)
    page = operator_client.get(f"/benchmarks/compare/?runs={before.pk}&runs={after.pk}").content.decode()
    assert '<strong class="ok">50.0%</strong>' in page  # bandwidth: 100 → 150 MB/s is better
    assert '<strong class="error">50.0%</strong>' in page  # p99: 2 → 3 ms is worse
    assert 'data-chart="compare-data"' in page
    alone = operator_client.get(f"/benchmarks/compare/?runs={before.pk}").content.decode()
    assert "Choose two or more finished runs" in alone


def test_run_again_repeats_the_manifests_jobs_on_the_same_target(operator_client, tank):
    first = _finished(tank, 100e6, 2_000_000)
    first.jobs = [{"name": "randrw-8k", "rw": "randrw", "bs": "8k", "size": "32m", "runtime": 4, "rwmixread": 67}]
    first.save()
    response = operator_client.post(f"/api/v1/benchmark-runs/{first.pk}/again/")
    assert response.status_code == 202, response.content
    again = Run.objects.get(pk=response.json()["id"])
    assert again.pk != first.pk and again.target == first.target and again.status == "queued"
    assert again.jobs[0]["runtime"] == 4 and again.jobs[0]["rwmixread"] == 67 and again.jobs[0]["bs"] == "8k"
