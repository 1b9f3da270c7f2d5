"""Network runs, suites, the ARC guard, schedules (django-celery-beat) and their history, downloads, and the pool's
expected figures beside a comparison: refusals are 400s naming the field with nothing started; pages and files are
rendered from stored data."""

import csv
import io
import json

import pytest
from django.utils import timezone
from django_celery_beat.models import PeriodicTask

from appliance.models import Host, Operation
from benchmarks import services
from benchmarks.models import CustomProfile, Run, Schedule, Suite
from benchmarks.services.shares import admits_loopback
from pools.models import Pool
from pools.selectors import pool_estimate
from shares.models import NfsExport, SmbShare
from tarn.celery import app
from tests.benchmarks.conftest import api, schedule_body
from tuning.models import KernelState, Link


@pytest.fixture
def nas(db):
    host = Host.objects.create(name="nas", transport="ssh", address="192.0.2.9")
    Link.objects.create(
        host=host, name="eth1", kind="ether", mtu=1500, addresses=[{"cidr": "10.77.0.2/24"}], observed_at=timezone.now()
    )
    return host


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"profile": "seq-write-1", "peer": "local", "address": "10.77.0.2"}, "profile"),
        ({"profile": "iperf-1", "peer": "nas", "address": "10.77.0.2"}, "peer"),  # itself
        ({"profile": "iperf-1", "peer": "nowhere", "address": "10.77.0.2"}, "peer"),
        ({"profile": "iperf-1", "peer": "local", "address": "10.77.0.9"}, "address"),  # not one of the NAS's
        ({"profile": "iperf-1", "peer": "local", "address": "10.77.0.2 -R"}, "address"),
        ({"profile": "iperf-1", "peer": "local", "address": "10.77.0.2", "runtime": 301}, "runtime"),
    ],
)
def test_bad_network_runs_are_a_400_naming_the_field_and_nothing_runs(operator_client, nas, local_host, data, field):
    response = api(operator_client, "benchmark-runs/network/", {"host": "nas", **data})
    assert response.status_code == 400, response.content
    assert field in response.json(), response.json()
    assert not Run.objects.exists() and not Operation.objects.exists()


def test_a_network_run_is_queued_both_ways_on_the_hosts_bench_queue(operator_client, nas, local_host):
    response = api(
        operator_client,
        "benchmark-runs/network/",
        {"host": "nas", "profile": "iperf-4", "peer": "local", "address": "10.77.0.2", "runtime": 3},
    )
    assert response.status_code == 202, response.content
    run = Run.objects.get()
    assert run.kind == "network" and run.peer == local_host and run.target == "10.77.0.2"
    assert [(j["streams"], j["seconds"], j["reverse"]) for j in run.jobs] == [(4, 3, False), (4, 3, True)]
    assert run.operation.kind == "benchmarks.network" and run.operation.target == "host:nas:benchmark"


def test_a_network_runs_page_shows_mbits_retransmits_and_the_iperf3_manifest(operator_client, nas, local_host):
    side = {"bw_bytes": 125_000_000, "iops": None, "retransmits": 7, "streams": 4, "mss": 1448}
    run = Run.objects.create(
        host=nas,
        kind="network",
        peer=local_host,
        profile="iperf-4",
        title="Network",
        target="10.77.0.2",
        outcome="succeeded",
        jobs=[{"name": "to-nas"}],
        results=[{"job": "to-nas", "read": None, "write": side}],
        series=[[[1000, 122070, 1]]],
        manifest={
            "iperf3": "iperf 3.12",
            "iperf3_peer": "iperf 3.12",
            "peer": "local",
            "mtu": {"eth1": 9000},
            "argv": [["iperf3", "-c", "10.77.0.2", "-P", "4"]],
        },
    )
    page = operator_client.get(f"/benchmarks/runs/{run.pk}/").content.decode()
    assert "(1000 Mbit/s)" in page and "4 streams, 7 retransmits, MSS 1448" in page
    assert "local ⇄ nas (10.77.0.2)" in page and "eth1 9000" in page and "iperf3 -c 10.77.0.2 -P 4" in page
    assert "retransmitted segments" in page and "latency-data" not in page.split("timeline-data")[-1]


def test_a_working_set_that_fits_in_the_arc_is_refused_unless_the_cache_is_the_point(operator_client, tank):
    KernelState.objects.create(host=tank, arc={"c_max": 2 << 30, "size": 1 << 30}, observed_at=timezone.now())
    data = {"host": "local", "profile": "seq-read-1", "dataset": "tank/data", "size": "2g"}
    refused = api(operator_client, "benchmark-runs/", data)
    assert (
        refused.status_code == 400
        and "twice the ARC" in refused.json()["size"][0]
        and "5g" in refused.json()["size"][0]
    )
    assert not Run.objects.exists()
    assert api(operator_client, "benchmark-runs/", {**data, "size": "5g"}).status_code == 202
    cached = api(operator_client, "benchmark-runs/", {**data, "cache_ok": True})
    assert cached.status_code == 400 and "Another operation" in str(cached.json())  # one at a time per host…
    Operation.objects.update(status="succeeded")
    assert api(operator_client, "benchmark-runs/", {**data, "cache_ok": True}).status_code == 202  # …then allowed


def test_run_properties_are_the_profiles_plus_those_asked_for_and_only_known_ones(operator_client, tank):
    bad = api(
        operator_client,
        "benchmark-runs/",
        {"host": "local", "profile": "randwrite-4k", "dataset": "tank/data", "properties": {"sync": "sometimes"}},
    )
    assert bad.status_code == 400 and "properties" in bad.json()
    worse = api(
        operator_client,
        "benchmark-runs/",
        {"host": "local", "profile": "randwrite-4k", "dataset": "tank/data", "properties": {"mountpoint": "/etc"}},
    )
    assert worse.status_code == 400 and "properties" in worse.json() and not Run.objects.exists()
    ok = api(
        operator_client,
        "benchmark-runs/",
        {"host": "local", "profile": "randwrite-4k", "dataset": "tank/data", "properties": {"sync": "always"}},
    )
    assert ok.status_code == 202 and Run.objects.get().properties == {"recordsize": "4K", "sync": "always"}


def test_a_suite_makes_one_run_per_profile_and_value_under_one_operation(operator_client, tank):
    response = api(
        operator_client,
        "benchmark-suites/",
        {
            "host": "local",
            "profiles": ["randwrite-4k", "seq-write-1"],
            "dataset": "tank/data",
            "prop": "sync",
            "values": ["standard", "always"],
            "size": "8g",
        },
    )
    assert response.status_code == 202, response.content
    suite = Suite.objects.get()
    runs = list(suite.runs.order_by("pk"))
    assert [(r.profile, r.properties.get("sync")) for r in runs] == [
        ("randwrite-4k", "standard"),
        ("randwrite-4k", "always"),
        ("seq-write-1", "standard"),
        ("seq-write-1", "always"),
    ]
    assert Operation.objects.count() == 1 and {r.operation_id for r in runs} == {suite.operation_id}
    assert suite.operation.kind == "benchmarks.suite"
    page = operator_client.get(f"/benchmarks/suites/{suite.pk}/").content.decode()
    assert page.count("sync=always") >= 2 and 'id="cancel-suite"' in page
    operator_client.post(f"/benchmarks/runs/{runs[0].pk}/cancel/")
    assert Run.objects.filter(suite=suite, cancel_requested=True).count() == 4  # the rest of the suite too


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"prop": "sync", "values": ["standard", "never"]}, "values"),
        ({"prop": "sync", "values": ["always"]}, "values"),
        ({"prop": "mountpoint", "values": ["/a", "/b"]}, "prop"),
        ({"profiles": []}, "profiles"),
        ({"profiles": ["iperf-1"]}, "profiles"),
    ],
)
def test_bad_suites_are_a_400_naming_the_field(operator_client, tank, data, field):
    body = {"host": "local", "profiles": ["randwrite-4k"], "dataset": "tank/data", "size": "8g", **data}
    response = api(operator_client, "benchmark-suites/", body)
    assert response.status_code == 400 and field in response.json(), response.content
    assert not Suite.objects.exists() and not Run.objects.exists() and not Operation.objects.exists()


def test_a_schedule_is_a_beat_entry_with_its_crontab_editable_and_deleted_with_its_name(operator_client, tank):
    response = api(operator_client, "benchmark-schedules/", schedule_body())
    assert response.status_code == 201, response.content
    schedule = Schedule.objects.get()
    task = PeriodicTask.objects.get(pk=schedule.task_id)
    assert task.task == "benchmarks.tasks.schedule_fire" and json.loads(task.args) == [schedule.pk] and task.enabled
    assert (task.crontab.minute, task.crontab.hour, task.crontab.day_of_week) == ("30", "2", "1-5")
    patched = operator_client.patch(
        f"/api/v1/benchmark-schedules/{schedule.pk}/",
        {"hour": "*/6", "enabled": False},
        content_type="application/json",
    )
    assert patched.status_code == 200, patched.content
    task.refresh_from_db()
    assert task.crontab.hour == "*/6" and task.crontab.minute == "30" and not task.enabled
    assert operator_client.delete(f"/api/v1/benchmark-schedules/{schedule.pk}/").status_code == 400
    assert operator_client.delete(f"/api/v1/benchmark-schedules/{schedule.pk}/?confirm=weekly").status_code == 204
    assert not Schedule.objects.exists() and not PeriodicTask.objects.filter(pk=task.pk).exists()


def test_sunday_may_be_written_7_as_crontab_has_it_and_the_pages_show_the_next_firing(operator_client, tank):
    """celery's crontab refuses 7: the schedule keeps what the admin typed, beat gets the days it names."""
    response = api(operator_client, "benchmark-schedules/", schedule_body(day_of_week="5-7", hour="4"))
    assert response.status_code == 201, response.content
    schedule = Schedule.objects.get()
    assert schedule.day_of_week == "5-7" and schedule.task.crontab.day_of_week == "0,5,6"
    assert timezone.localtime(schedule.next_run).isoweekday() in (5, 6, 7)
    shown = f"{timezone.localtime(schedule.next_run):%Y-%m-%d} 04:30"
    assert shown in operator_client.get("/benchmarks/schedules/").content.decode()
    assert shown in operator_client.get(f"/benchmarks/schedules/{schedule.pk}/").content.decode()


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"minute": "61"}, "minute"),
        ({"hour": "2;reboot"}, "hour"),
        ({"day_of_week": "8"}, "day_of_week"),
        ({"target": "tank/nope"}, "target"),
        ({"profiles": ["iperf-1"]}, "profiles"),
    ],
)
def test_bad_schedules_are_a_400_naming_the_field_and_nothing_is_scheduled(operator_client, tank, data, field):
    response = api(operator_client, "benchmark-schedules/", schedule_body(**data))
    assert response.status_code == 400 and field in response.json(), response.content
    assert not Schedule.objects.exists() and not PeriodicTask.objects.filter(task__startswith="benchmarks").exists()


def test_a_schedule_firing_starts_its_suite_or_says_why_it_skipped(tank, admin_user):
    schedule = services.schedule_save(
        host=tank, user=admin_user, data={k: v for k, v in schedule_body().items() if k != "host"}
    )
    suite = services.schedule_fire(schedule.pk)
    assert suite.schedule == schedule and suite.runs.get().schedule == schedule
    assert services.schedule_fire(schedule.pk) is None  # the first still runs: one benchmark at a time per host
    schedule.refresh_from_db()
    assert schedule.last_message == "Skipped: another benchmark was running on the host." and schedule.last_fired_at


def _scheduled(host, schedule, bw):
    side = {"bw_bytes": bw, "iops": 1, "p99_ns": 1}
    run = Run.objects.create(
        host=host,
        profile="seq-write-1",
        title="Sequential write",
        target="tank/data",
        schedule=schedule,
        results=[{"job": "seq", "write": side}],
    )
    services.common.finish(run, "succeeded", "done")
    run.refresh_from_db()
    return run


def test_a_scheduled_run_below_its_history_by_more_than_the_threshold_is_flagged(operator_client, tank, admin_user):
    schedule = Schedule.objects.create(
        host=tank, name="nightly", profiles=["seq-write-1"], target="tank/data", drop_percent=10
    )
    first, second = _scheduled(tank, schedule, 500e6), _scheduled(tank, schedule, 520e6)
    steady = _scheduled(tank, schedule, 480e6)  # 5% below the median of 500 and 520: within the threshold
    drop = _scheduled(tank, schedule, 300e6)  # 40% below the median (500)
    assert not first.flag and not second.flag and not steady.flag
    assert drop.flag.startswith("40% below the median of the previous 3 runs (300.0 vs 500.0 MB/s")
    page = operator_client.get(f"/benchmarks/schedules/{schedule.pk}/").content.decode()
    assert 'data-chart="history-data"' in page and "40% below the median" in page
    listing = operator_client.get("/benchmarks/").content.decode()
    assert "badge-failed" in listing and ">drop<" in listing


def test_results_download_as_csv_and_json(operator_client, tank):
    side = {
        "bw_bytes": 100e6,
        "iops": 12207.0,
        "lat_mean_ns": 80000,
        "p50_ns": 70000,
        "p95_ns": 1,
        "p99_ns": 2,
        "p999_ns": 3,
    }
    run = Run.objects.create(
        host=tank,
        profile="randrw-8k",
        title="Random",
        target="tank/data",
        outcome="succeeded",
        properties={"sync": "always"},
        results=[{"job": "randrw-8k", "read": side, "write": side}],
        manifest={"fio": "fio-3.33"},
        series=[[[1000, 5, 0]]],
    )
    response = operator_client.get(f"/benchmarks/runs/{run.pk}/results.csv")
    assert response["Content-Disposition"] == f'attachment; filename="tarn-run-{run.pk}-randrw-8k.csv"'
    rows = list(csv.reader(io.StringIO(response.content.decode())))
    assert rows[0][:6] == ["run", "profile", "target", "job", "direction", "bandwidth_bytes_s"]
    assert [r[4] for r in rows[1:]] == ["read", "write"] and rows[1][6] == "12207.0" and rows[1][12] == "sync=always"
    data = operator_client.get(f"/benchmarks/runs/{run.pk}/results.json").json()
    assert data["manifest"] == {"fio": "fio-3.33"} and data["series"] == [[[1000, 5, 0]]] and data["properties"]
    assert operator_client.get(f"/benchmarks/runs/{run.pk}/results.xml").status_code == 404


def test_a_comparison_draws_the_pools_expected_figures_from_its_layout(operator_client, tank):
    estimate = pool_estimate(pool=Pool.objects.get(name="tank"))
    assert (estimate.read_mbs, estimate.write_mbs, estimate.iops) == (1000, 500, 50_000)  # a mirror of two SSDs
    side = {"bw_bytes": 100e6, "iops": 1, "p99_ns": 1}
    a, b = (
        Run.objects.create(
            host=tank,
            profile="seq-read-1",
            title="Seq",
            target="tank/data",
            outcome="succeeded",
            results=[{"job": "seq", "read": side}],
        )
        for _ in range(2)
    )
    page = operator_client.get(f"/benchmarks/compare/?runs={a.pk}&runs={b.pk}").content.decode()
    assert "about 1000 MB/s read, 500 MB/s write, 50000 random IOPS" in page
    assert "Pool's estimate from its layout" in page


@pytest.fixture
def shares(tank):
    SmbShare.objects.create(host=tank, name="docs", dataset="tank/data", path="/tank/data", valid_users="")
    SmbShare.objects.create(host=tank, name="team", dataset="tank/data", path="/tank/data", valid_users="alice @staff")
    SmbShare.objects.create(host=tank, name="ro", dataset="tank/data", path="/tank/data", read_only=True)
    NfsExport.objects.create(host=tank, dataset="tank/data", path="/tank/data", clients="10.0.0.0/24\n127.0.0.0/8")
    NfsExport.objects.create(host=tank, dataset="tank/data", path="/tank/lan", clients="10.0.0.0/24")
    return tank


@pytest.mark.parametrize(
    ("data", "field", "says"),
    [
        ({"protocol": "smb", "share": "nope"}, "share", "no SMB share nope"),
        ({"protocol": "smb", "share": "team"}, "share", "add tarnbench"),
        ({"protocol": "smb", "share": "ro"}, "share", "read-only"),
        ({"protocol": "nfs", "share": "/tank/lan"}, "share", "add 127.0.0.1"),
        ({"protocol": "nfs", "share": "/etc"}, "share", "exports no /etc"),
        ({"protocol": "afp", "share": "docs"}, "protocol", ""),
        ({"protocol": "smb", "share": "docs", "size": "1g;rm"}, "size", ""),
    ],
)
def test_bad_share_runs_are_a_400_naming_the_field_and_nothing_runs(operator_client, shares, data, field, says):
    response = api(operator_client, "benchmark-runs/share/", {"host": "local", "profile": "seq-write-1", **data})
    assert response.status_code == 400 and says in str(response.json().get(field)), response.content
    assert not Run.objects.exists() and not Operation.objects.exists()


def test_a_share_run_is_queued_against_its_dataset_from_the_page(operator_client, shares):
    page = operator_client.get("/benchmarks/").content.decode()
    assert 'value="smb:docs"' in page and 'value="nfs:/tank/data"' in page and 'value="smb:ro"' not in page
    response = operator_client.post(
        "/benchmarks/", {"start": "run", "profile": "seq-write-1", "target": "nfs:/tank/data", "size": "8g"}
    )
    run = Run.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/benchmarks/runs/{run.pk}/"
    assert (run.kind, run.share, run.target, run.title) == (
        "nfs",
        "/tank/data",
        "tank/data",
        "Sequential write 1M, 1 stream over NFS",
    )


def test_run_again_of_a_share_run_checks_the_share_again(operator_client, shares):
    """The export stopped admitting the host itself since the first run: Run again is refused with the same words
    as a new run, and nothing is queued."""
    first = Run.objects.create(
        host=shares,
        kind="nfs",
        profile="seq-write-1",
        title="Seq over NFS",
        target="tank/data",
        share="/tank/data",
        outcome="succeeded",
        jobs=[{"name": "seq-write-1", "rw": "write", "bs": "1m", "size": "8g", "runtime": 5}],
    )
    NfsExport.objects.filter(path="/tank/data").update(clients="10.0.0.0/24")
    response = operator_client.post(f"/api/v1/benchmark-runs/{first.pk}/again/")
    assert response.status_code == 400 and "add 127.0.0.1" in str(response.json()["share"]), response.content
    assert Run.objects.count() == 1 and not Operation.objects.exists()


@pytest.mark.parametrize(
    ("clients", "admits"),
    [
        ("*", True),
        ("127.0.0.1", True),
        ("localhost(rw)", True),
        ("10.0.0.0/8\n127.0.0.0/8", True),
        ("10.0.0.0/8", False),
        ("host.example", False),
        ("", False),
    ],
)
def test_an_export_admits_a_loopback_mount_only_when_its_clients_include_this_host(clients, admits):
    assert admits_loopback(clients) is admits


def test_a_profile_is_copied_with_changed_fields_and_runs_like_a_built_in_one(admin_client, operator_client, tank):
    response = api(
        admin_client,
        "benchmark-profiles/",
        {
            "based_on": "randread-4k",
            "title": "VM images 16k qd32",
            "job": {"bs": "16k", "iodepth": 32, "ioengine": "io_uring"},
            "properties": {"recordsize": "16K"},
        },
    )
    assert response.status_code == 201, response.content
    key = response.json()["key"]
    job = response.json()["jobs"][0]
    assert (job["rw"], job["bs"], job["iodepth"], job["ioengine"], job["name"]) == (
        "randread",
        "16k",
        32,
        "io_uring",
        "vm-images-16k-qd32",
    )
    listed = operator_client.get("/api/v1/benchmark-profiles/").json()
    assert key in [p["key"] for p in listed] and "iperf-4" in [p["key"] for p in listed]
    started = api(
        operator_client, "benchmark-runs/", {"host": "local", "profile": key, "dataset": "tank/data", "size": "8g"}
    )
    assert started.status_code == 202, started.content
    run = Run.objects.get()
    assert run.title == "VM images 16k qd32" and run.jobs[0]["bs"] == "16k" and run.properties == {"recordsize": "16K"}
    page = operator_client.get("/benchmarks/").content.decode()
    assert f'value="{key}"' in page
    assert admin_client.delete(f"/api/v1/benchmark-profiles/{response.json()['custom']}/").status_code == 400
    gone = admin_client.delete(f"/api/v1/benchmark-profiles/{response.json()['custom']}/?confirm=VM images 16k qd32")
    assert gone.status_code == 204 and not CustomProfile.objects.exists()


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"job": {"bs": "4k\nfilename=/dev/sda"}}, "bs"),
        ({"job": {"ioengine": "exec"}}, "ioengine"),
        ({"job": {"iodepth": 1000}}, "iodepth"),
        ({"job": {"exec_prerun": "rm -rf /"}}, "job"),
        ({"job": {"name": "x"}}, "job"),
        ({"based_on": "iperf-1"}, "based_on"),
        ({"title": " "}, "title"),
        ({"properties": {"sync": "maybe"}}, "properties"),
    ],
)
def test_a_bad_copy_is_a_400_naming_the_field_and_nothing_is_saved(admin_client, data, field):
    body = {"based_on": "randread-4k", "title": "mine", **data}
    response = api(admin_client, "benchmark-profiles/", body)
    assert response.status_code == 400 and field in response.json(), response.content
    assert not CustomProfile.objects.exists()


def test_the_copy_page_is_prefilled_from_the_original(admin_client):
    page = admin_client.get("/benchmarks/profiles/copy/?from=qd-sweep").content.decode()
    assert "a sweep of 9 jobs" in page and 'value="Queue-depth sweep 4k random read (9 to 33) (copy)"' in page
    assert 'name="iodepth" value="9"' in page
    response = admin_client.post(
        "/benchmarks/profiles/copy/?from=qd-sweep",
        {
            "title": "qd 64",
            "rw": "randread",
            "bs": "4k",
            "size": "1g",
            "runtime": 30,
            "ramp": 5,
            "numjobs": 1,
            "iodepth": 64,
            "ioengine": "io_uring",
            "nrfiles": 1,
            "recordsize": "4K",
        },
    )
    assert response.status_code == 302
    copy = CustomProfile.objects.get()
    assert copy.jobs[0]["iodepth"] == 64 and copy.based_on == "qd-sweep" and copy.properties == {"recordsize": "4K"}
    assert "qd 64" in admin_client.get("/benchmarks/profiles/").content.decode()


def test_only_an_admin_copies_or_deletes_a_profile_in_pages_and_api(admin_user, operator_client, admin_client):
    """Issue 23 item 5: an operator's copy answered 201 and deleting by the listed key answered 500."""
    mine = CustomProfile.objects.create(title="Mine", based_on="seq-write-1", jobs=[], created_by=admin_user)
    body = {"based_on": "randread-4k", "title": "Operator's"}
    assert api(operator_client, "benchmark-profiles/", body).status_code == 403
    assert operator_client.delete(f"/api/v1/benchmark-profiles/{mine.pk}/?confirm=Mine").status_code == 403
    assert operator_client.delete(f"/api/v1/benchmark-profiles/{mine.key}/?confirm=Mine").status_code == 403
    assert operator_client.get("/benchmarks/profiles/copy/?from=randread-4k").status_code == 403
    form = {"title": "x", "rw": "randread", "bs": "4k", "size": "1g", "runtime": 30, "ramp": 5, "numjobs": 1}
    assert operator_client.post("/benchmarks/profiles/copy/?from=randread-4k", form).status_code == 403
    assert operator_client.post(f"/benchmarks/profiles/{mine.pk}/delete/", {"confirm": "Mine"}).status_code == 403
    page = operator_client.get("/benchmarks/profiles/").content.decode()
    assert "/benchmarks/profiles/copy/" not in page and f"/benchmarks/profiles/{mine.pk}/delete/" not in page
    assert list(CustomProfile.objects.values_list("title", flat=True)) == ["Mine"]
    # The admin may; a key that is no copy is a 404 saying so, never a 500; the listed key deletes too.
    admin_client.raise_request_exception = False
    for wrong in ["seq-write-1", "custom-x", "abc", "custom-²"]:
        assert admin_client.delete(f"/api/v1/benchmark-profiles/{wrong}/?confirm=Mine").status_code == 404, wrong
    assert admin_client.delete(f"/api/v1/benchmark-profiles/{mine.key}/?confirm=Mine").status_code == 204
    assert not CustomProfile.objects.exists()


def test_a_run_longer_than_the_default_task_limit_is_queued_with_its_own(
    operator_client, tank, monkeypatch, django_capture_on_commit_callbacks
):
    sent = []
    monkeypatch.setattr(app, "send_task", lambda name, **kw: sent.append(kw))
    with django_capture_on_commit_callbacks(execute=True):
        api(
            operator_client,
            "benchmark-runs/",
            {"host": "local", "profile": "seq-read-1", "dataset": "tank/data", "size": "8g", "runtime": 4 * 3600},
        )  # an L2ARC warm-up
    assert sent[-1]["soft_time_limit"] == 4 * 3600 + 10 + 900 and sent[-1]["time_limit"] > sent[-1]["soft_time_limit"]
    Operation.objects.update(status="succeeded")
    with django_capture_on_commit_callbacks(execute=True):
        api(
            operator_client,
            "benchmark-runs/",
            {"host": "local", "profile": "seq-read-1", "dataset": "tank/data", "size": "8g", "runtime": 60},
        )
    assert "soft_time_limit" not in sent[-1]  # the default limit (an hour) is enough


def test_an_l2arc_warm_up_needs_a_cache_vdev_and_a_working_set_between_the_arc_and_arc_plus_l2arc(
    operator_client, tank
):
    KernelState.objects.create(host=tank, arc={"c_max": 1 << 30, "size": 1 << 30}, observed_at=timezone.now())
    data = {"host": "local", "profile": "l2arc-warmup", "dataset": "tank/data", "size": "2g"}
    refused = api(operator_client, "benchmark-runs/", data)
    assert refused.status_code == 400 and "no cache (L2ARC) vdev" in refused.json()["profile"][0]
    pool = Pool.objects.get(name="tank")
    pool.vdevs.create(position=9, name="nvme0n1", type="disk", role="cache", state="ONLINE", size=4 << 30)
    for size, words in (("1g", "from 1025m to 5119m"), ("6g", "smaller than ARC + L2ARC (5120 MiB)")):
        refused = api(operator_client, "benchmark-runs/", {**data, "size": size})
        assert refused.status_code == 400 and words in refused.json()["size"][0], refused.json()
    assert not Run.objects.exists()
    assert api(operator_client, "benchmark-runs/", data).status_code == 202
    run = Run.objects.get()
    assert len(run.jobs) == 8 and {j["name"] for j in run.jobs} == {"l2arc"}  # passes over the same files
