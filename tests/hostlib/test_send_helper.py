"""tarn-send's parts that run without a NAS: the token bucket's pace and the progress file (the transfers
themselves are proven in the lab, between two guests)."""

import json
import threading
import time

import pytest

from hostlib import send_helper
from hostlib.send_helper import Bucket, Progress


class Clock:
    """The bucket's clock: time moves only when it sleeps (and by a microsecond a take), so the pace measured is the
    bucket's own, not what a busy machine let the test's loop do (it failed beside the lab, niced)."""

    def __init__(self):
        self.now = 0.0

    def monotonic(self):
        self.now += 1e-6
        return self.now

    def sleep(self, seconds):
        self.now += seconds


@pytest.mark.parametrize("rate", [2 << 20, 8 << 20])
def test_the_bucket_holds_the_rate_per_second_not_only_on_average(rate, monkeypatch):
    clock = Clock()
    monkeypatch.setattr(send_helper, "time", clock)
    bucket, moved = Bucket(rate), [0, 0, 0]
    while clock.now < 3.0:
        second = int(clock.now)
        moved[second] += bucket.take(send_helper.CHUNK)
    # The first second may carry the initial burst (a tenth of a second's worth) on top.
    assert rate * 0.95 <= moved[0] <= rate * 1.15, moved
    assert [rate * 0.98 <= m <= rate * 1.02 for m in moved[1:]] == [True, True], moved


def test_a_short_move_gives_its_tokens_back():
    bucket = Bucket(1 << 20)
    taken = bucket.take(1 << 20)
    bucket.refund(taken)
    assert bucket.take(1 << 20) == taken


def test_without_a_limit_every_chunk_goes_at_once():
    bucket = Bucket(0)
    started = time.monotonic()
    assert all(bucket.take(send_helper.CHUNK) == send_helper.CHUNK for _ in range(10000))
    assert time.monotonic() - started < 0.5


def test_progress_is_replaced_whole_and_carries_the_rate(tmp_path):
    path = tmp_path / "run.json"
    progress = Progress(str(path), steps=2)
    progress.write(step=0, snapshot="tank/docs@a")
    progress.last_write = 0  # as if a second had passed
    progress.moved(5000)
    state = json.loads(path.read_text())
    assert state["state"] == "running" and state["snapshot"] == "tank/docs@a"
    assert (state["bytes"], state["total"], state["steps"]) == (5000, 5000, 2) and state["rate"] > 0
    progress.write(state="done")
    assert json.loads(path.read_text())["state"] == "done"
    assert [p.name for p in tmp_path.iterdir()] == ["run.json"], "no temporary file left behind"


def test_a_look_returns_when_the_run_ends_or_when_its_time_is_up(tmp_path):
    path = tmp_path / "run.json"
    progress = Progress(str(path), steps=1)
    progress.write()
    started = time.monotonic()
    assert json.loads(send_helper.wait(str(path), 0.6))["state"] == "running"
    assert 0.55 <= time.monotonic() - started < 2.0, "a running transfer: the look waits its time"
    ender = threading.Timer(0.3, progress.write, kwargs={"state": "done"})
    ender.start()
    started = time.monotonic()
    ended = json.loads(send_helper.wait(str(path), 10))
    ender.join()
    assert ended["state"] == "done" and time.monotonic() - started < 2.0, "the end is seen when it comes"
    assert ended["updated"] >= ended["started"]
    assert send_helper.wait(str(tmp_path / "none.json"), 0.2) == "", "no progress yet: nothing, after the wait"


def test_a_step_sends_with_zfs_send_only():
    with pytest.raises(ValueError, match="zfs send only"):
        send_helper.transfer({"send": ["sh", "-c", "true"], "dataset": ""}, {}, Bucket(0), None)


def test_a_run_that_breaks_unexpectedly_still_ends_its_progress_as_failed(tmp_path):
    """Tarn waits for a run until its progress says it ended: a helper that dies of an error it did not expect (in
    the lab: a data connection failing with EHOSTUNREACH) must not leave "running" behind."""
    spec, progress = tmp_path / "spec.json", tmp_path / "progress.json"
    step = {"send": ["sh", "-c", "true"], "dataset": "docs", "snapshot": "tank/docs@a"}
    spec.write_text(json.dumps({"steps": [step], "ssh": {}, "progress": str(progress)}))
    with pytest.raises(ValueError):
        send_helper.main(str(spec))
    ended = json.loads(progress.read_text())
    assert ended["state"] == "failed" and "zfs send only" in ended["stderr"]["send"], ended


def test_the_receive_request_travels_as_one_json_argument():
    argv = send_helper.ssh_argv(
        {"identity": "/k", "known_hosts": "/kh", "cipher": "aes128-gcm@openssh.com", "port": 22, "address": "10.0.0.2"},
        {"verb": "receive", "dataset": "tank/docs"},
    )
    assert argv[argv.index("--") + 1 :] == ["10.0.0.2", '{"verb": "receive", "dataset": "tank/docs"}']
    assert argv[argv.index("-l") + 1] == "root", "a pull's login (tarn-serve); a push names the pair's user"
    pushed = send_helper.ssh_argv(
        {
            "identity": "/k",
            "known_hosts": "/kh",
            "cipher": "c",
            "port": 22,
            "address": "10.0.0.2",
            "user": "tarn-recv-7",
        },
        {},
    )
    assert pushed[pushed.index("-l") + 1] == "tarn-recv-7"
    assert "Ciphers=aes128-gcm@openssh.com" in argv and "StrictHostKeyChecking=yes" in argv


def test_a_runs_steps_are_sessions_on_one_shared_connection_that_runs_no_command(tmp_path):
    ssh = {
        "identity": "/k",
        "known_hosts": "/kh",
        "cipher": "aes128-gcm@openssh.com",
        "port": 22,
        "address": "10.0.0.2",
    }
    master = send_helper.master_argv(ssh, "/run/tarn/replication/mux-1")
    assert master[-3:] == ["-N", "--", "10.0.0.2"] and "ControlMaster=yes" in master
    step = send_helper.ssh_argv(ssh, {"verb": "receive"}, "/run/tarn/replication/mux-1")
    assert "ControlMaster=no" in step and "ControlPath=/run/tarn/replication/mux-1" in step
    assert master[: master.index("-l") + 2] == step[: step.index("-l") + 2], "the same key, pinned host, cipher"
    # No connection to be had: the steps connect on their own (and say why they cannot), nothing waits forever.
    unreachable = {**ssh, "address": "127.0.0.1", "port": 9, "known_hosts": str(tmp_path / "kh")}
    process, control = send_helper.shared_connection(unreachable, str(tmp_path / "mux"), wait=10)
    assert control == "" and process.wait(timeout=10) != 0


def test_the_helper_is_self_contained():
    source = open(send_helper.__file__).read()
    imports = {line.split()[1] for line in source.splitlines() if line.startswith(("import ", "from "))}
    assert imports == {"fcntl", "json", "os", "select", "socket", "subprocess", "sys", "tempfile", "time"}


SSH = {"identity": "/k", "known_hosts": "/kh", "cipher": "aes128-gcm@openssh.com", "port": 22, "address": "10.0.0.1"}


def test_a_push_sends_here_into_the_receivers_forced_command_and_a_pull_the_other_way_round():
    step = {"send": ["zfs", "send", "-w", "--", "tank/docs@a"], "dataset": "docs"}
    sender, receiver, env = send_helper.ends(step, {**SSH, "idle": 30})
    assert sender == step["send"] and receiver[0] == "ssh" and env is None
    assert json.loads(receiver[-1]) == {"verb": "receive", "dataset": "docs", "idle": 30}, "first: the target's say"

    sender, receiver, env = send_helper.ends(step, {**SSH, "idle": 30}, pull={"pair": 7, "root": "backup/lab"})
    assert sender[0] == "ssh" and json.loads(sender[-1]) == {"verb": "send", "argv": step["send"], "idle": 30}
    assert receiver == ["/usr/bin/python3", "/usr/local/lib/tarn/tarn-recv", "7", "backup/lab"]
    assert json.loads(env["SSH_ORIGINAL_COMMAND"]) == {"verb": "receive", "dataset": "docs", "idle": 30}
