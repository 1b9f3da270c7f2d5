"""Benchmark runs against the lab's real OpenZFS and fio: fio runs on the guest as a transient unit, the run keeps
its manifest, results and series, and its scratch dataset is gone afterwards, also when cancelled."""

import shlex
import subprocess
import threading
import time
from dataclasses import replace
from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone
from django_celery_beat.models import PeriodicTask

from appliance.operations import operations_reap
from benchmarks import services
from benchmarks.models import Run, Suite
from benchmarks.selectors import storage_profiles, suite_detail
from hostlib import fio, iperf
from hostlib.fio import size_bytes
from hostlib.runner import LocalTransport
from pools.services import inventory_refresh
from shares import services as share_services
from tarn.celery import app
from tests.support.inline import run_when_queued
from tests.support.worker import start_beat, start_worker, stop_worker
from tuning.services import links_refresh

pytestmark = [pytest.mark.lab, pytest.mark.lane(1)]


@pytest.fixture
def tank(guest, lab_host):
    guest.enter(
        "bench-tank", lambda: guest.sh("zpool create -f tank /dev/disk/by-id/virtio-zfsdisk1 && zfs create tank/data")
    )
    inventory_refresh(host=lab_host)
    return lab_host


def no_leftovers(guest, run):
    assert run.scratch not in guest.sh("zfs list -H -o name"), "the scratch dataset is removed"
    assert guest.sh("pgrep -x fio || true").strip() == "", "no fio process is left"
    assert "tarn-bench" not in guest.sh("systemctl list-units --all --no-legend 'tarn-bench*' || true")


def test_a_profile_runs_on_the_host_and_its_result_manifest_and_series_are_kept(guest, tank, admin_user, run_queued):
    run = run_queued(
        services.benchmark_start,
        host=tank,
        user=admin_user,
        profile="randrw-8k",
        dataset="tank/data",
        size="16m",
        runtime=4,
        cache_ok=True,
    )
    run.refresh_from_db()
    assert run.status == "succeeded", run.message
    result = run.results[0]
    assert result["read"]["iops"] > 0 and result["write"]["iops"] > 0 and result["read"]["p99_ns"] > 0
    assert run.series[0] and {p[2] for p in run.series[0]} == {0, 1}
    m = run.manifest
    assert m["dataset_properties"]["recordsize"] == str(8 << 10)  # the profile's: a record per I/O
    assert any("--create_only=1" in a for a in m["argv"][0]), "reads: the files are laid out, then caches dropped"
    assert m["fio"].startswith("fio-3.") and m["openzfs"].startswith("zfs-kmod-2.3") and m["arc_c_max"] > 0
    assert m["dataset_properties"]["compression"] == "off" and m["argv"][0][0] == "fio"
    assert "--rw=randrw" in m["argv"][1] and "--runtime=4" in m["argv"][1]
    no_leftovers(guest, run)


@pytest.mark.django_db(transaction=True)
def test_a_cancelled_run_leaves_no_fio_process_and_no_files(guest, tank, admin_user, run_queued):
    def cancel():  # what the page's Cancel does, while the worker follows the run
        for run in Run.objects.status_in("running").select_related("operation"):
            services.benchmark_cancel(run=run, user=admin_user)

    timer = threading.Timer(8, cancel)
    timer.start()
    try:
        run_queued(
            services.benchmark_start,
            host=tank,
            user=admin_user,
            profile="seq-write-1",
            dataset="tank/data",
            size="64m",
            runtime=120,
            cache_ok=True,
        )
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
        run = services.benchmark_start(
            host=tank,
            user=admin_user,
            profile="seq-write-1",
            dataset="tank/data",
            size="64m",
            runtime=120,
            cache_ok=True,
        )
        deadline = time.monotonic() + 120
        while not Run.objects.filter(pk=run.pk, progress__gt=0).exists():  # fio is running on the guest
            assert time.monotonic() < deadline, (tmp_path / "worker.log").read_text()[-2000:]
            time.sleep(0.5)
    finally:
        stop_worker(worker, sig=9)
    assert guest.sh("pgrep -x fio || true").strip(), "fio outlives the worker: it runs on the host"
    monkeypatch.setattr(app, "send_task", run_when_queued)  # the clean-up the reaper queues runs here
    operations_reap(stale_after=timedelta(0))  # what the reaper does once the heartbeat is stale
    run = Run.objects.select_related("operation").get(pk=run.pk)
    assert (run.status, run.outcome) == ("failed", "") and "stopped" in run.status_message  # read, not mended
    no_leftovers(guest, run)


def covering(profiles) -> list:
    """The fewest profiles (greedy) that between them use every fio option value, every kind of sweep and every
    dataset property any built-in profile uses: running those proves the rest's argv shapes, at a fraction of
    the time (23 profiles took 493 s here)."""

    def traits(profile) -> set:
        found = {("jobs", len(profile.jobs) > 1), *(("property", k) for k in profile.properties)}
        for job in profile.jobs:
            found |= {("rw", job.rw), ("ioengine", job.ioengine), ("sync", job.sync), ("direct", job.direct)}
            found |= {("end_fsync", job.end_fsync), ("mix", job.rwmixread is not None)}
            found |= {("numjobs", job.numjobs > 1), ("iodepth", job.iodepth > 1), ("nrfiles", job.nrfiles > 1)}
        return found

    left, chosen = set().union(*(traits(p) for p in profiles)), []
    while left:
        best = max(profiles, key=lambda p: len(traits(p) & left) / len(p.jobs))  # a job is the cost
        chosen.append(best)
        left -= traits(best)
    return chosen


def test_every_built_in_profile_is_accepted_by_fio_and_a_covering_few_run_and_parse(
    guest, tank, admin_user, run_queued
):
    profiles = storage_profiles()
    # Every job of every profile, exactly as Tarn would start it, through the guest's fio option parser in one call:
    # each job's options follow its own --name (fio parses them within that job's section; one bad option fails the
    # call), the same command line once (43 fio starts took ~10 s under emulation, the one call ~2 s).
    checks = []
    for profile in profiles:
        for job in profile.jobs:
            small = replace(job, size="16m", runtime=1, ramp=0)
            argv = fio.argv(small, "/tmp", output="/tmp/p.json", bw_log="/tmp/p")  # a folder that exists
            assert argv[0] == "fio" and argv[1].startswith("--name="), argv
            checks.append(argv[1:])
    unique = list({shlex.join(c): c for c in checks}.values())
    guest.sh(shlex.join(["fio", *(option for c in unique for option in c), "--parse-only"]))
    assert len(checks) == sum(len(p.jobs) for p in profiles) > len(profiles)
    bad = [*unique[0], *unique[1], "--ioengine=no-such-engine"]  # in the second job's section
    assert guest.lab_sh("ssh", shlex.join(["fio", *bad, "--parse-only"])).returncode != 0, "a bad job fails the call"

    chosen = covering(profiles)
    assert len(chosen) < len(profiles) / 2, [p.key for p in chosen]
    suite = run_queued(
        services.suite_start,
        host=tank,
        user=admin_user,
        profiles=[p.key for p in chosen],
        dataset="tank/data",
        size="16m",
        runtime=1,
        ramp=0,
        cache_ok=True,
    )
    runs = list(Run.objects.filter(suite=suite).order_by("pk"))
    assert [r.profile for r in runs] == [p.key for p in chosen]
    for run, profile in zip(runs, chosen, strict=True):
        assert run.status == "succeeded", (run.profile, run.message)
        assert len(run.results) == len(profile.jobs), run.profile
        for job, result in zip(profile.jobs, run.results, strict=True):
            directions = {"read": ["read"], "randread": ["read"], "write": ["write"], "randwrite": ["write"]}
            for direction in directions.get(job.rw, ["read", "write"]):
                side = result[direction]
                assert side and side["bw_bytes"] > 0 and side["iops"] > 0, (run.profile, direction, result)
        expected = {k: v for k, v in profile.properties.items()}
        assert {k: run.manifest["dataset_properties"][k] for k in expected} == {
            k: str(size_bytes(v.lower())) for k, v in expected.items()
        }, run.profile
    assert "tarnbench" not in guest.sh("zfs list -H -o name")


def test_sync_always_against_standard_compares_in_the_expected_direction(guest, tank, admin_user, run_queued):
    suite = run_queued(
        services.suite_start,
        host=tank,
        user=admin_user,
        profiles=["randwrite-4k"],
        dataset="tank/data",
        prop="sync",
        values=["standard", "always"],
        size="16m",
        runtime=4,
        ramp=0,
        cache_ok=True,
    )
    standard, always = Run.objects.filter(suite=suite).order_by("pk")
    assert standard.manifest["dataset_properties"]["sync"] == "standard"
    assert always.manifest["dataset_properties"]["sync"] == "always"
    fast, slow = standard.results[0]["write"]["iops"], always.results[0]["write"]["iops"]
    assert slow < fast * 0.8, (fast, slow)  # every 4k write waits for the ZIL
    rows = suite_detail(Suite.objects.get(pk=suite.pk))["rows"]
    iops = next(r for r in rows if r["metric"] == "IOPS" and r["direction"] == "write")
    assert iops["cells"][1]["diff"] < -20 and not iops["cells"][1]["better"]


def test_iperf3_over_the_lab_data_link_both_ways(guest, tank, local_host, admin_user, run_queued):
    links_refresh(host=tank)
    address = guest.env["LAB_GUEST_DATA_ADDR"].split("/")[0]
    run = run_queued(
        services.benchmark_network_start,
        host=tank,
        user=admin_user,
        profile="iperf-4",
        peer=local_host,
        address=address,
        runtime=2,
    )
    run.refresh_from_db()
    assert run.status == "succeeded", run.message
    to_nas, from_nas = run.results
    assert to_nas["write"]["bw_bytes"] > 1e6 and from_nas["read"]["bw_bytes"] > 1e6
    assert to_nas["write"]["streams"] == 4 and not to_nas["network"]["reverse"] and from_nas["network"]["reverse"]
    assert len(run.series) == 2 and len(run.series[0]) >= 2
    assert run.manifest["iperf3"].startswith("iperf 3") and run.manifest["argv"][0][:3] == ["iperf3", "-c", address]
    assert guest.sh("pgrep -x iperf3 || true").strip() == "", "the one-off server is gone"


def test_iperf3_runs_without_root_at_both_ends_and_the_server_listens_on_the_data_address_only(guest):
    """Issue 23, item 7: the NAS's one-off server is a dynamic user's sandboxed unit bound to the measured address;
    the client on this machine (where every NAS's key lives) runs as nobody with no capability, and still measures."""
    address, port = guest.env["LAB_GUEST_DATA_ADDR"].split("/")[0], 5302
    t, local = guest.transport(), LocalTransport()
    t.run(iperf.server_argv("990001", address, port=port), mutating=True, timeout=30)
    try:
        deadline = time.monotonic() + 20
        while not (listening := guest.sh(f"ss -Hltn 'sport = :{port}'")).strip() and time.monotonic() < deadline:
            time.sleep(0.3)
        assert [line.split()[3] for line in listening.splitlines()] == [f"{address}:{port}"], listening
        pid = guest.sh("pgrep -x iperf3").split()[0]
        owner = guest.sh(f"ps -o user= -p {pid}").strip()
        assert owner and owner != "root", owner
        assert guest.sh(f"grep ^CapEff /proc/{pid}/status").split()[1].strip("0") == "", "no capability left"
        assert "Connection refused" in guest.sh(f"iperf3 -c 127.0.0.1 -p {port} -t 1 2>&1 || true"), "not on lo"

        argv = iperf.unprivileged(local, iperf.client_argv(address, seconds=3, reverse=False, port=port))
        assert local.privileged and argv[0] == "setpriv"
        seen: list[str] = []
        client = threading.Thread(target=lambda: seen.append(local.run(argv, timeout=60).stdout))
        client.start()
        users: list[str] = []
        while client.is_alive() and not users:
            ps = subprocess.run(["ps", "-o", "user=", "-C", "iperf3"], capture_output=True, text=True, timeout=10)
            users = ps.stdout.split()
            time.sleep(0.2)
        client.join()
        assert users and set(users) == {"nobody"}, users
        assert iperf.parse_client(seen[0], reverse=False, argv=argv).bps > 1e6, "as nobody it still measures"
    finally:
        t.run(["systemctl", "stop", "--", "tarn-iperf-990001.service"], mutating=True, check=False)
        t.close()


@pytest.mark.django_db(transaction=True)
def test_a_schedule_fires_from_beat_and_its_run_joins_the_history(guest, tank, admin_user, tmp_path):
    # An ordinary hourly schedule, saved through the same validation a person's goes through, whose beat entry last
    # ran two hours ago: its minute has passed since, so beat fires the missed run as soon as it starts (celery's
    # crontab catch-up), instead of the test waiting 20-80 s for a minute boundary.
    now = timezone.localtime()
    schedule = services.schedule_save(
        host=tank,
        user=admin_user,
        data={
            "name": "hourly",
            "profiles": ["seq-write-1"],
            "target": "tank/data",
            "size": "8m",
            "runtime": 2,
            "cache_ok": True,
            "minute": str((now + timedelta(minutes=30)).minute),
            "hour": "*",
            "day_of_week": "*",
            "drop_percent": 10,
            "enabled": True,
        },
    )
    PeriodicTask.objects.filter(pk=schedule.task_id).update(last_run_at=now - timedelta(hours=2))
    worker = start_worker(f"default,{tank.bench_queue}", tmp_path / "worker.log")
    beat = start_beat(tmp_path / "beat.log")
    try:
        deadline = time.monotonic() + 150  # beat's start, then the run
        while not Run.objects.filter(schedule=schedule, outcome="succeeded").exists():
            assert time.monotonic() < deadline, (tmp_path / "beat.log").read_text()[-1500:]
            time.sleep(1)
    finally:
        stop_worker(beat)
        stop_worker(worker)
    schedule.refresh_from_db()
    assert schedule.last_message.startswith("Started suite") and schedule.last_fired_at
    run = Run.objects.get(schedule=schedule)
    assert run.suite.schedule == schedule and run.results[0]["write"]["bw_bytes"] > 0


def test_smb_and_nfs_loopback_targets_run_and_leave_nothing_behind(guest, tank, admin_user, run_queued):
    def shared(start, **kwargs):
        op = run_queued(start, host=tank, user=admin_user, **kwargs)
        assert op.status == "succeeded", op.message

    guest.sh("zfs create tank/docs && touch /tank/docs/keep.txt")
    inventory_refresh(host=tank)
    shared(
        share_services.smb_share_save_start,
        data={"name": "docs", "dataset": "tank/docs", "path": "/tank/docs", "valid_users": ""},
    )
    shared(
        share_services.nfs_export_save_start,
        data={"dataset": "tank/docs", "clients": "127.0.0.1", "squash": "root_squash"},
    )
    results = {}
    for protocol, share in (("smb", "docs"), ("nfs", "/tank/docs")):
        run = run_queued(
            services.benchmark_share_start,
            host=tank,
            user=admin_user,
            profile="randrw-8k",
            protocol=protocol,
            share=share,
            size="16m",
            runtime=3,
            ramp=0,
            cache_ok=True,
        )
        run.refresh_from_db()
        assert run.status == "succeeded", (protocol, run.message)
        assert run.results[0]["read"]["iops"] > 0 and run.results[0]["write"]["iops"] > 0
        mount = run.manifest["mount"]
        assert mount[:3] == ["mount", "-t", "cifs" if protocol == "smb" else "nfs"], mount
        assert not any("password" in part for part in mount), "the SMB password never reaches argv"
        results[protocol] = run.results[0]["write"]["bw_bytes"]
        assert guest.sh(f"grep -c tarnbench-{run.pk} /proc/mounts || true").strip() == "0", "unmounted"
        assert guest.sh("ls -A /tank/docs").split() == ["keep.txt"], (
            "the scratch folder is gone, the share's files stay"
        )
        assert guest.sh("ls -A /run/tarn | grep -c bench || true").strip() == "0", "no output or credentials left"
    assert "tarnbench:" in guest.sh("pdbedit -L -w || true") and "D" in guest.sh("pdbedit -L -w | grep tarnbench")
    assert results["smb"] > 0 and results["nfs"] > 0

    # A user of a client of the export (nobody here) watches for the scratch folder and plants fio's file name as a
    # link to a file only root may write: the NAS's root fio must never write through it (issue 23, item 1).
    guest.sh("echo untouched > /root/canary.txt")
    planter = (
        'while :; do for d in /tank/docs/tarnbench-*; do [ -d "$d" ] && '
        'ln -sfn /root/canary.txt "$d/seq-write-1.0.0" 2>/dev/null; done; sleep 0.05; done'
    )
    guest.sh(f"setsid setpriv --reuid=65534 --regid=65534 --clear-groups sh -c '{planter}' >/dev/null 2>&1 &")
    try:
        run = run_queued(
            services.benchmark_share_start,
            host=tank,
            user=admin_user,
            profile="seq-write-1",
            protocol="nfs",
            share="/tank/docs",
            size="16m",
            runtime=2,
            ramp=0,
            cache_ok=True,
        )
    finally:
        guest.sh("pkill -u 65534 -f tarnbench || true")
    run.refresh_from_db()
    assert run.status == "failed", run.message
    assert "not a regular file" in run.message or "fio ended" in run.message, run.message
    assert guest.sh("cat /root/canary.txt").strip() == "untouched", "root fio never wrote through the planted link"
    assert guest.sh("ls -A /tank/docs").split() == ["keep.txt"], "the scratch folder is gone all the same"
