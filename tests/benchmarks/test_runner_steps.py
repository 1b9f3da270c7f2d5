"""The storage benchmark runner's steps without the lab: a FakeHost answers with output captured from the lab guest
and records every command, so each test asserts the order (scratch dataset, layout, dropped caches, fio as a
transient unit, its result read, the scratch dataset destroyed whatever happened) and the run's status."""

import time
from datetime import timedelta
from types import SimpleNamespace

import pytest
from django.utils import timezone

from appliance.choices import Role
from appliance.models import Host, Operation, User
from appliance.operations import operations_reap
from benchmarks.models import Run
from benchmarks.selectors import run_charts
from benchmarks.services import benchmark_start
from benchmarks.services import common as bench_common
from hostlib import fio
from hostlib.systemd import SANDBOX
from hostlib.zfs import ARCSTATS
from pools.models import Pool
from tests.support.runners import FakeHost, captured

ENDED_WELL = "ActiveState=inactive\nResult=success\n"


@pytest.fixture
def admin(db):
    """An admin with no password hash (nobody logs in here; hashing costs a second a test)."""
    return User.objects.create_user("alice", password=None, role=Role.ADMIN)


@pytest.fixture
def fake(tank, monkeypatch):
    """The lab guest as a FakeHost: fio's units end well at once, having written the captured fio output and
    bandwidth log where they were told to; following a unit does not sleep."""
    host = FakeHost().install(monkeypatch)
    monkeypatch.setattr(bench_common, "time", SimpleNamespace(sleep=lambda seconds: None, monotonic=time.monotonic))
    every = ("zfs", "get", "-H", "-p", "-o", "property,value")  # a dataset's properties, its mountpoint among them

    def properties(argv):
        host.answer(*every, stdout=f"recordsize\t8192\ncompression\toff\nmountpoint\t/{argv[-1]}\n")

    host.on(*every, call=properties)
    host.answer("systemctl", "show", stdout=ENDED_WELL)

    def fio_writes(argv):
        options = dict(a[2:].split("=", 1) for a in argv if a.startswith("--") and "=" in a)
        if "output" in options:
            host.files[options["output"]] = captured("fio_randrw_output.txt")
            host.files[f"{options['write_bw_log']}_bw.1.log"] = captured("fio_bw.log")

    host.on("systemd-run", call=fio_writes)

    def marked(argv):  # the scratch dataset carries the mark zfs create gave it
        tag = next(a.split("=", 1)[1] for a in argv if a.startswith("tarn:made-by="))
        host.answer("zfs", "get", "-H", "-o", "value", "tarn:made-by", stdout=f"{tag}\n")

    host.on("zfs", "create", call=marked)
    return host


def heads(fake) -> list[list[str]]:
    """Each command's tool and first argument: the order of the steps."""
    return [argv[:2] for argv in fake.argvs]


def test_a_read_run_lays_out_drops_the_caches_runs_fio_as_a_unit_reads_the_result_and_destroys_its_dataset(
    run_queued, fake, tank, admin
):
    seen = []
    fake.on("systemd-run", call=lambda argv: seen.append(Run.objects.get().status))
    run = run_queued(
        benchmark_start, host=tank, user=admin, profile="randrw-8k", dataset="tank/data", size="2g", runtime=5
    )
    n, scratch = run.pk, f"tank/data/tarnbench-{run.pk}"
    where = f"/{scratch}"
    layout = (
        f"fio --name=randrw-8k --directory={where} --rw=randrw --bs=8k --size=2g --numjobs=1 --nrfiles=1 "
        "--refill_buffers --buffer_compress_percentage=0 --create_only=1"
    ).split()
    measured = (
        f"fio --name=randrw-8k --directory={where} --rw=randrw --bs=8k --size=2g --numjobs=1 --iodepth=1 "
        "--ioengine=psync --nrfiles=1 --time_based --runtime=5 --ramp_time=10 --refill_buffers "
        "--buffer_compress_percentage=0 --group_reporting --output-format=json+ --percentile_list=50:95:99:99.9 "
        f"--output={where}/result-0.json --write_bw_log={where}/bw-0 --log_avg_msec=1000 --status-interval=1 "
        "--rwmixread=67 --end_fsync=1"
    ).split()
    state = ["systemctl", "show", "-p", "ActiveState", "-p", "Result", "--", f"tarn-bench-{n}.service"]
    sandbox = [f"--property={p}" for p in SANDBOX] + [f"--property=ReadWritePaths={where} {where}"]
    tripwire = ["find", "-P", where, "-mindepth", "1", "!", "-type", "f", "!", "-type", "d", "-print", "-quit"]
    assert fake.argvs == [
        [
            "zfs",
            "create",
            "-o",
            "compression=off",
            "-o",
            "atime=off",
            "-o",
            "recordsize=8192",
            "-o",
            f"tarn:made-by=bench-{n}",
            "--",
            scratch,
        ],
        ["zfs", "get", "-H", "-p", "-o", "property,value", "all", "--", scratch],  # its mountpoint among them
        ["cat", "--", "/proc/sys/kernel/osrelease", "/sys/module/zfs/version", "/proc/spl/kstat/zfs/arcstats"],
        ["systemd-run", f"--unit=tarn-bench-{n}", f"--description=Tarn benchmark {n}: layout", *sandbox, "--", *layout],
        # the rest of the manifest is read while the files are laid out, not while anything is measured
        ["zpool", "list", "-v", "-H", "-P", "--", "tank"],
        state,
        ["sysctl", "-q", "-w", "vm.drop_caches=3"],
        tripwire,  # nothing but regular files where fio will write
        [
            "systemd-run",
            f"--unit=tarn-bench-{n}",
            f"--description=Tarn benchmark {n}: Random 67/33 read/write 8k",
            *sandbox,  # no devices, everything read-only but its folder
            "--",
            *measured,
        ],
        state,
        ["cat", "--", f"{where}/result-0.json", f"{where}/bw-0_bw.1.log"],
        ["zfs", "get", "-H", "-o", "value", "tarn:made-by", "--", scratch],  # only what this run made
        ["zfs", "destroy", "-r", "--", scratch],
    ]
    assert seen == ["running", "running"]
    assert (run.status, run.message, run.progress) == ("succeeded", "1 job done.", 100) and run.finished_at
    result = fio.parse_result(captured("fio_randrw_output.txt")).as_dict()
    assert run.results == [{"job": "randrw-8k", **result}] and result["read"]["bw_bytes"] > 0
    series = [list(p) for p in fio.parse_bw_log(captured("fio_bw.log"))]
    assert run.series == [series] and series[0] == [1000, 14528, 0]
    manifest = run.manifest
    assert manifest["argv"] == [layout, measured] and manifest["caches_dropped"] is True
    assert (manifest["dataset"], manifest["mountpoint"]) == (scratch, where)
    # the kernel and module as read with the ARC; fio's version as the fio that ran wrote it in its result
    assert (manifest["kernel"], manifest["openzfs"], manifest["fio"]) == (
        "6.1.0-56-amd64",
        "zfs-kmod-2.3.2-2~bpo12+2",
        "fio-3.33",
    )
    assert manifest["arc_c_max"] == 628075520 and manifest["dataset_properties"] == {
        "recordsize": "8192",
        "compression": "off",
        "mountpoint": where,
    }
    op = Operation.objects.get(pk=run.operation_id)
    assert (op.kind, op.status, op.message, op.target) == (
        "benchmarks.run",
        "succeeded",
        "1 job done.",
        "host:local:benchmark",
    )


def test_a_write_run_with_a_short_ramp_reads_the_manifest_before_fio_starts_and_drops_no_caches(
    run_queued, fake, tank, admin
):
    run = run_queued(
        benchmark_start, host=tank, user=admin, profile="seq-write-1", dataset="tank/data", size="2g", runtime=5, ramp=0
    )
    assert heads(fake) == [
        ["zfs", "create"],
        ["zfs", "get"],
        ["cat", "--"],
        ["zpool", "list"],
        ["find", "-P"],
        ["systemd-run", f"--unit=tarn-bench-{run.pk}"],
        ["systemctl", "show"],
        ["cat", "--"],
        ["zfs", "get"],  # the scratch dataset's mark: this run made it
        ["zfs", "destroy"],
    ]
    assert "recordsize=1048576" in fake.argvs[0] and "--ramp_time=0" in fake.argvs[5]
    assert "--rw=write" in fake.argvs[5] and "--end_fsync=1" in fake.argvs[5]
    assert run.status == "succeeded" and [r["job"] for r in run.results] == ["seq-write-1"]


def test_a_run_on_an_encrypted_dataset_records_its_encryption_and_the_kernels_aes_and_gcm(
    run_queued, fake, tank, admin, viewer_client
):
    tank.facts = {**tank.facts, "aes_impl": "generic", "gcm_impl": "pclmulqdq"}
    tank.save(update_fields=["facts"])
    every = ("zfs", "get", "-H", "-p", "-o", "property,value")

    def encrypted(argv):  # the scratch dataset inherits its parent's encryption (zfs get -p prints it so)
        fake.answer(
            *every,
            stdout=f"recordsize\t1048576\ncompression\toff\nmountpoint\t/{argv[-1]}\nencryption\taes-256-gcm\n"
            "encryptionroot\ttank/data\nkeyformat\tpassphrase\nkeystatus\tavailable\n",
        )

    fake.on(*every, call=encrypted)
    run = run_queued(
        benchmark_start, host=tank, user=admin, profile="seq-write-1", dataset="tank/data", size="2g", runtime=5, ramp=0
    )
    assert run.status == "succeeded"
    assert run.manifest["encryption"] == {"cipher": "aes-256-gcm", "root": "tank/data", "format": "passphrase"}
    assert (run.manifest["aes_impl"], run.manifest["gcm_impl"]) == ("generic", "pclmulqdq")
    assert ["zfs", "get"] not in heads(fake)[2:-2]  # read with the properties: no command of its own
    page = viewer_client.get(f"/benchmarks/runs/{run.pk}/").content.decode()
    assert "aes-256-gcm" in page and "<code>tank/data</code>, key format passphrase" in page
    assert "AES generic, GCM pclmulqdq" in page and "AES instructions are not" in page


def test_a_run_on_a_plain_dataset_records_encryption_off_and_warns_of_nothing(
    run_queued, fake, tank, admin, viewer_client
):
    tank.facts = {**tank.facts, "aes_impl": "generic", "gcm_impl": "generic"}
    tank.save(update_fields=["facts"])
    run = run_queued(
        benchmark_start, host=tank, user=admin, profile="seq-write-1", dataset="tank/data", size="2g", runtime=5, ramp=0
    )
    assert (run.manifest["encryption"], run.manifest["aes_impl"], run.manifest["gcm_impl"]) == (
        "off",
        "generic",
        "generic",
    )
    page = viewer_client.get(f"/benchmarks/runs/{run.pk}/").content.decode()
    assert 'id="manifest-encryption">off;' in page and "AES instructions" not in page


def test_a_working_set_that_fits_in_the_arc_now_fails_the_run_and_still_destroys_its_dataset(
    run_queued, fake, tank, admin
):
    run = run_queued(
        benchmark_start, host=tank, user=admin, profile="seq-write-1", dataset="tank/data", size="64m", runtime=5
    )
    scratch = f"tank/data/tarnbench-{run.pk}"
    assert fake.mutations == [
        ["zfs", "create", "-o", "compression=off", "-o", "atime=off", "-o", "recordsize=1048576"]
        + ["-o", f"tarn:made-by=bench-{run.pk}", "--", scratch],
        ["zfs", "destroy", "-r", "--", scratch],
    ]
    assert heads(fake) == [["zfs", "create"], ["zfs", "get"], ["cat", "--"], ["zfs", "get"], ["zfs", "destroy"]]
    message = "The working set is less than twice the ARC's maximum (598 MiB) now."
    assert (run.status, run.message) == ("failed", message) and run.finished_at and not run.results
    op = Operation.objects.get(pk=run.operation_id)
    assert (op.status, op.message) == ("failed", message)


def test_a_fio_unit_that_fails_is_stopped_forgotten_and_its_dataset_destroyed(run_queued, fake, tank, admin):
    fake.answer("systemctl", "show", stdout="ActiveState=failed\nResult=exit-code\n")
    run = run_queued(
        benchmark_start, host=tank, user=admin, profile="seq-write-1", dataset="tank/data", size="2g", runtime=5
    )
    n = run.pk
    assert [m[:2] for m in fake.mutations] == [
        ["zfs", "create"],
        ["systemd-run", f"--unit=tarn-bench-{n}"],
        ["systemctl", "stop"],
        ["systemctl", "reset-failed"],
        ["zfs", "destroy"],
    ]
    assert fake.mutations[2:] == [
        ["systemctl", "stop", "--", f"tarn-bench-{n}.service"],
        ["systemctl", "reset-failed", "--", f"tarn-bench-{n}.service"],
        ["zfs", "destroy", "-r", "--", f"tank/data/tarnbench-{n}"],
    ]
    assert heads(fake)[-5:] == [
        ["systemctl", "show"],
        ["systemctl", "stop"],
        ["systemctl", "reset-failed"],
        ["zfs", "get"],
        ["zfs", "destroy"],
    ]
    message = f"fio ended with exit-code; see the host's journal for tarn-bench-{n}"
    assert (run.status, run.message) == ("failed", message) and not run.results
    assert Operation.objects.get(pk=run.operation_id).status == "failed"


def test_a_cancelled_run_stops_its_unit_and_removes_its_dataset(run_queued, fake, tank, admin):
    fake.on("systemd-run", call=lambda argv: Run.objects.update(cancel_requested=True))
    run = run_queued(
        benchmark_start, host=tank, user=admin, profile="seq-write-1", dataset="tank/data", size="2g", runtime=5
    )
    n = run.pk
    assert [m[:2] for m in fake.mutations[:2]] == [["zfs", "create"], ["systemd-run", f"--unit=tarn-bench-{n}"]]
    assert fake.mutations[2:] == [
        ["systemctl", "stop", "--", f"tarn-bench-{n}.service"],  # seen cancelled while following it
        ["systemctl", "stop", "--", f"tarn-bench-{n}.service"],  # and again on the way out, as for any live unit
        ["systemctl", "reset-failed", "--", f"tarn-bench-{n}.service"],
        ["zfs", "destroy", "-r", "--", f"tank/data/tarnbench-{n}"],
    ]
    assert not any(argv[:2] == ["systemctl", "show"] for argv in fake.argvs)  # stopped before asking how it went
    assert (run.status, run.message, run.results) == ("cancelled", "Cancelled; its files are removed.", [])
    op = Operation.objects.get(pk=run.operation_id)
    assert (op.status, op.message) == ("succeeded", "Cancelled; its files are removed.")


def worker_died(tank, **run) -> Run:
    """A run its worker had begun when it died: its operation still running, its heartbeat an hour old."""
    stale = timezone.now() - timedelta(hours=1)
    op = Operation.objects.create(
        kind="benchmarks.run", target="host:local:benchmark", host=tank, status="running", heartbeat_at=stale
    )
    return Run.objects.create(
        host=tank, profile="seq-write-1", target="tank/data", operation=op, started_at=stale, **run
    )


def test_a_run_whose_worker_died_on_a_host_made_read_only_since_is_failed_and_nothing_removed(run_queued, fake, tank):
    run = worker_died(tank)
    Host.objects.filter(pk=tank.pk).update(read_only=True)
    assert run_queued(operations_reap, stale_after=timedelta(minutes=5)) == 1  # no refusal stops the reaper
    run = Run.objects.select_related("operation").get(pk=run.pk)
    assert (run.status, run.outcome) == ("failed", "") and run.status_message.endswith(
        "local is read-only in Tarn: its unit and scratch dataset stay."
    )
    assert not fake.mutations and Operation.objects.count() == 1


def test_a_run_whose_worker_died_is_failed_and_its_unit_and_dataset_cleaned_up(run_queued, fake, tank, admin):
    run = worker_died(tank, title="Sequential write 1M", jobs=[{"name": "seq-write-1", "numjobs": 1}])
    fake.answer("zfs", "get", "-H", "-o", "value", "tarn:made-by", stdout=f"bench-{run.pk}\n")  # it made it
    assert run_queued(operations_reap, stale_after=timedelta(minutes=5)) == 1
    run = Run.objects.select_related("operation").get(pk=run.pk)
    assert (run.status, run.status_message) == (
        "failed",
        "The worker following this run stopped; Tarn removes its unit and files.",
    )
    op = run.operation
    assert fake.mutations == [
        ["systemctl", "stop", "--", f"tarn-bench-{run.pk}.service"],
        ["systemctl", "reset-failed", "--", f"tarn-bench-{run.pk}.service"],
        ["systemctl", "stop", "--", f"tarn-iperf-{op.pk}.service"],
        ["systemctl", "reset-failed", "--", f"tarn-iperf-{op.pk}.service"],
        ["zfs", "destroy", "-r", "--", f"tank/data/tarnbench-{run.pk}"],
    ]
    cleanup = Operation.objects.get(kind="benchmarks.cleanup")
    assert (cleanup.status, cleanup.target) == ("succeeded", f"host:local:benchmark-cleanup:{run.pk}")


def test_the_runs_of_a_suite_whose_worker_died_read_failed_and_only_the_one_begun_is_cleaned_up(run_queued, fake, tank):
    begun = worker_died(tank)
    waiting = Run.objects.create(host=tank, profile="seq-write-1", target="tank/data", operation=begun.operation)
    done = Run.objects.create(
        host=tank, profile="seq-write-1", target="tank/data", operation=begun.operation, outcome="succeeded"
    )
    Operation.objects.filter(pk=begun.operation_id).update(kind="benchmarks.suite")
    assert [r.status for r in Run.objects.select_related("operation").order_by("pk")] == [
        "running",
        "queued",
        "succeeded",
    ]
    run_queued(operations_reap, stale_after=timedelta(minutes=5))
    assert [r.status for r in Run.objects.select_related("operation").order_by("pk")] == [
        "failed",
        "failed",
        "succeeded",
    ]
    assert [op.params for op in Operation.objects.filter(kind="benchmarks.cleanup")] == [{"run": begun.pk}]
    assert Run.objects.get(pk=waiting.pk).status_message.startswith("The worker running this operation stopped")
    assert Run.objects.get(pk=done.pk).message == ""


def test_an_l2arc_warm_up_lays_out_and_drops_the_caches_once_and_records_each_pass_hit_ratios(
    run_queued, fake, tank, admin
):
    tank_pool = Pool.objects.get(name="tank")
    tank_pool.vdevs.create(position=9, name="nvme0n1", type="disk", role="cache", state="ONLINE", size=4 << 30)
    reads = iter(range(100))

    def arcstats_now(argv):  # every read: 100 more ARC hits and misses, and more L2ARC hits each time
        n = next(reads)
        text = f"13 1 0x01 147 39984 1 1\nname type data\nhits 4 {100 * n}\nmisses 4 {100 * n}\nl2_hits 4 {10 * n * n}\nl2_misses 4 {100 * n}\n"
        fake.answer("cat", "--", ARCSTATS, stdout=f"{text}l2_size 4 {n << 20}\nc_max 4 628075520\n")

    fake.on("cat", "--", ARCSTATS, call=arcstats_now)
    run = run_queued(
        benchmark_start, host=tank, user=admin, profile="l2arc-warmup", dataset="tank/data", size="2g", runtime=5
    )
    assert run.status == "succeeded", run.message
    assert sum(a[:2] == ["sysctl", "-q"] for a in fake.argvs) == 1, "the caches are dropped once, before pass 1"
    assert sum("--create_only=1" in a for a in fake.argvs) == 1, "the files are laid out once"
    assert [r["job"] for r in run.results] == [f"pass {n}" for n in range(1, 9)]
    first, second = run.results[0]["cache"], run.results[1]["cache"]
    assert first["arc_hit_pct"] == 50.0 and second["l2_hit_pct"] > first["l2_hit_pct"] > 0
    assert run.manifest["caches_dropped"] == "once"
    charts = run_charts(run)
    assert charts["passes"]["labels"] == [f"pass {n}" for n in range(1, 9)] and not charts["per_job"]["datasets"]
    assert [d["label"] for d in charts["hits"]["datasets"]] == ["L2ARC hits %", "ARC hits %"]


def test_a_scratch_dataset_that_existed_before_the_run_is_never_destroyed(run_queued, fake, tank, admin):
    """zfs create fails (the name is taken: an admin's dataset, or a leftover): the clean-up reads the mark,
    finds it is not this run's, and destroys nothing."""
    fake.answer("zfs", "create", returncode=1, stderr="cannot create 'tank/data/tarnbench-1': dataset already exists")
    unmarked = ("zfs", "get", "-H", "-o", "value", "tarn:made-by")  # the existing one carries no mark of this run
    fake.on("zfs", "create", call=lambda argv: fake.answer(*unmarked, stdout="-\n"))
    run = run_queued(
        benchmark_start, host=tank, user=admin, profile="seq-write-1", dataset="tank/data", size="2g", runtime=5
    )
    assert run.status == "failed" and "already exists" in run.message
    assert not any(argv[:2] == ["zfs", "destroy"] for argv in fake.argvs)


def test_a_link_planted_in_the_scratch_folder_stops_the_run_before_fio_opens_anything(run_queued, fake, tank, admin):
    """The tripwire before each pass: anything but a regular file where fio works (a link to a disk, a device
    node) refuses the run; no measured fio unit starts, and the clean-up still runs."""
    fake.answer("find", "-P", stdout="/tank/data/tarnbench-1/randrw-8k.0.0\n")
    run = run_queued(
        benchmark_start, host=tank, user=admin, profile="randrw-8k", dataset="tank/data", size="2g", runtime=5
    )
    assert run.status == "failed" and run.message == (
        "Refused: /tank/data/tarnbench-1/randrw-8k.0.0 in the scratch folder is not a regular file (planted by someone?)."
    )
    started = [a for a in fake.argvs if a[0] == "systemd-run"]
    assert len(started) == 1 and "layout" in started[0][2], "only the layout ran"
    assert fake.argvs[-1][:2] == ["zfs", "destroy"]


def test_loopback_mounts_never_follow_links_open_devices_or_run_files():
    from hostlib import mounts  # noqa: PLC0415

    class Recorder:
        argvs = []

        def run(self, argv, **kwargs):
            self.argvs.append(argv)

    t = Recorder()
    mounts.mount_nfs(t, "/tank/docs", "/run/tarn/tarnbench-1")
    mounts.mount_smb(t, "docs", "/run/tarn/tarnbench-2", credentials="/run/tarn/bench-2.credentials")
    nfs, smb = (set(argv[argv.index("-o") + 1].split(",")) for argv in t.argvs)
    assert {"nosymfollow", "nodev", "nosuid", "noexec"} <= nfs
    assert {"nodev", "nosuid", "noexec"} <= smb  # smbd resolves links itself, within the share (wide links = no)
