"""fio: the exact argv built from validated fields, hostile values refused before any argv exists, and the JSON
result and bandwidth log captured from a run in the lab parsed."""

from dataclasses import replace
from pathlib import Path

import pytest

from benchmarks.profiles import BUILT_IN, PROFILES
from hostlib import fio

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "host"
JOB = fio.FioJob(name="randrw-8k", rw="randrw", bs="8k", size="32m", runtime=3, rwmixread=67)


def test_the_argv_is_exact_and_keeps_the_result_honest():
    assert fio.argv(JOB, "/tank/bench", output="/tank/bench/result.json", bw_log="/tank/bench/bw") == [
        "fio",
        "--name=randrw-8k",
        "--directory=/tank/bench",
        "--rw=randrw",
        "--bs=8k",
        "--size=32m",
        "--numjobs=1",
        "--iodepth=1",
        "--ioengine=psync",
        "--nrfiles=1",
        "--time_based",
        "--runtime=3",
        "--ramp_time=0",
        "--refill_buffers",
        "--buffer_compress_percentage=0",
        "--group_reporting",
        "--output-format=json+",
        "--percentile_list=50:95:99:99.9",
        "--output=/tank/bench/result.json",
        "--write_bw_log=/tank/bench/bw",
        "--log_avg_msec=1000",
        "--status-interval=1",
        "--rwmixread=67",
    ]
    sync = fio.argv(replace(JOB, sync=True, end_fsync=True), "/tank/b", output="/tank/b/r.json", bw_log="/tank/b/bw")
    assert sync[-2:] == ["--sync=1", "--end_fsync=1"]


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("name", "a\n[evil]\nexec_prerun=id"),
        ("name", "x=y"),
        ("rw", "randread\nioengine=exec"),
        ("bs", "4k:8k"),
        ("bs", "$(id)"),
        ("size", "1g\nfilename=/dev/sda"),
        ("size", "0g"),
        ("ioengine", "exec"),
        ("numjobs", 65),
        ("numjobs", True),
        ("iodepth", 0),
        ("runtime", 86401),
        ("rwmixread", 101),
    ],
)
def test_hostile_or_out_of_range_fields_are_refused_naming_the_field(field, value):
    job = replace(JOB, **{field: value})
    assert field in fio.problems(job)
    with pytest.raises(ValueError):
        fio.argv(job, "/tank/bench", output="/tank/bench/r.json", bw_log="/tank/bench/bw")


@pytest.mark.parametrize("directory", ["/tank/a:/dev/sda", "/dev/sdb", "/tank/../etc", "/tank/.zfs/snapshot", "tank"])
def test_targets_stay_inside_a_pool(directory):
    with pytest.raises(ValueError):
        fio.check_directory(directory)


def test_the_captured_jsonplus_result_parses_with_percentiles_per_direction():
    result = fio.parse_result((FIXTURES / "fio_randrw_output.txt").read_text())
    assert result.version.startswith("fio-3.")
    for side in (result.read, result.write):
        assert side.bw_bytes > 0 and side.iops > 0 and side.io_bytes > 0 and side.runtime_ms > 0
        assert 0 < side.p50_ns <= side.p95_ns <= side.p99_ns <= side.p999_ns
    assert result.read.iops > result.write.iops  # 67/33 read/write
    assert fio.parse_result((FIXTURES / "fio.json").read_text()).read is None  # a write-only job


def test_the_bandwidth_log_parses_into_a_time_series():
    points = fio.parse_bw_log((FIXTURES / "fio_bw.log").read_text())
    assert points and all(ms > 0 and kib >= 0 and d in (0, 1) for ms, kib, d in points)
    assert {d for _, _, d in points} == {0, 1}


def test_every_built_in_profile_builds_a_valid_fio_command_or_is_a_network_profile():
    assert {
        "seq-write-1",
        "seq-read-5",
        "randrw-4k",
        "qd-sweep",
        "sync-write-4k",
        "fileserver",
        "file-size-sweep",
        "talk-randrw-128k",
        "iperf-4",
    } <= set(PROFILES)
    for profile in BUILT_IN:
        assert profile.jobs or profile.iperf_streams, profile.key
        for job in profile.jobs:
            assert fio.problems(job) == {}, (profile.key, fio.problems(job))
    assert [j.iodepth for j in PROFILES["qd-sweep"].jobs] == [9, 12, 15, 18, 21, 24, 27, 30, 33]
    assert "queue depth 1" in PROFILES["talk-randrw-128k"].caveat


def test_status_intervals_append_documents_and_the_last_is_the_result():
    docs = fio.documents((FIXTURES / "fio_randrw_output.txt").read_text())
    assert len(docs) >= 2  # --status-interval=1 on a 3 s run: live progress, then the result
    assert docs[-1]["jobs"][0]["read"]["io_bytes"] >= docs[0]["jobs"][0]["read"]["io_bytes"]


def test_the_result_and_the_bandwidth_log_read_in_one_command_split_apart():
    result, log = (FIXTURES / "fio_randrw_output.txt").read_text(), (FIXTURES / "fio_bw.log").read_text()
    text, rest = fio.split_output(result + log)
    assert fio.parse_result(text) == fio.parse_result(result) and fio.parse_bw_log(rest) == fio.parse_bw_log(log)
    assert fio.split_output(result)[1].strip() == "" and fio.split_output("")[0] == ""  # no log yet, nothing at all
