"""tarn-recv, the replication key's forced command: the request is data, the argv is its own, into its root only."""

import io
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from hostlib import recv_helper, replication, send_helper
from hostlib.recv_helper import Refused, main
from hostlib.runner import LocalTransport

ROOT = Path(__file__).resolve().parents[2]


def request(**fields) -> dict:
    return {"SSH_ORIGINAL_COMMAND": json.dumps({"verb": "receive", **fields})}


def test_a_receive_goes_below_the_root_read_only_unmounted_and_never_forced():
    target, idle, tcp = main(["tarn-recv", "7", "backup/lab"], request(dataset="tank/docs"))
    assert (target, idle, tcp) == ("backup/lab/tank/docs", recv_helper.IDLE, False)
    assert main(["tarn-recv", "7", "backup/lab"], request(dataset="docs", idle=5, tcp=True)) == (
        "backup/lab/docs",
        5,
        True,
    )
    argv = recv_helper.receive_argv("backup/lab/docs", volume=False)
    assert argv == [
        "zfs", "receive", "-s", "-u",
        "-o", "readonly=on", "-o", "canmount=noauto", "-o", "setuid=off", "-o", "exec=off", "-o", "devices=off",
        "-x", "quota", "-x", "refquota", "-x", "reservation", "-x", "refreservation",
        "--", "backup/lab/docs",
    ]  # fmt: skip
    assert "-F" not in argv
    volume = recv_helper.receive_argv("backup/lab/vol", volume=True)
    assert volume[volume.index("-o") : volume.index("-x")] == ["-o", "readonly=on"], "the rest apply to no volume"


@pytest.mark.parametrize(
    "environ, says",
    [
        ({}, "not JSON"),
        ({"SSH_ORIGINAL_COMMAND": "zfs receive -F backup/lab"}, "not JSON"),
        ({"SSH_ORIGINAL_COMMAND": json.dumps({"verb": "destroy", "dataset": "x"})}, "may only receive"),
        ({"SSH_ORIGINAL_COMMAND": json.dumps(["receive"])}, "may only receive"),
        (request(dataset="../other"), "not a dataset path"),
        (request(dataset="a/../../etc"), "not a dataset path"),
        (request(dataset="/abs"), "not a dataset path"),
        (request(dataset="-F"), "not a dataset path"),
        (request(dataset="a b"), "not a dataset path"),
        (request(dataset="x@snap"), "not a dataset path"),
        (request(dataset="a;rm -rf /"), "not a dataset path"),
        (request(dataset="x", force=True), "unknown fields"),
        (request(dataset="x", first=True), "unknown fields"),  # whether it is the first is the target's to say
        (request(dataset=""), "a path below the target's root"),
        (request(), "a path below the target's root"),
        (request(dataset="x", tcp="yes"), "tcp is true or false"),
        (request(dataset="x", idle=1), "idle is whole seconds"),
        (request(dataset="x", idle=True), "idle is whole seconds"),
        (request(dataset="x", idle="60"), "idle is whole seconds"),
        (request(dataset=["x"]), "a path below the target's root"),
        (request(dataset="a/" * 129 + "a"), "longer than ZFS allows"),
        ({"SSH_ORIGINAL_COMMAND": " " * 5000}, "too long"),
    ],
)
def test_anything_but_a_plain_receive_into_its_root_is_refused(environ, says):
    with pytest.raises(Refused, match=says):
        main(["tarn-recv", "7", "backup/lab"], environ)


@pytest.mark.parametrize("argv", [["tarn-recv"], ["tarn-recv", "x", "backup"], ["tarn-recv", "7", "-F"]])
def test_a_bad_forced_command_line_is_refused(argv):
    with pytest.raises(Refused):
        main(argv, request(dataset=""))


def test_the_helper_is_self_contained():
    """Tarn writes its source to the NAS: nothing but the standard library."""
    source = open(recv_helper.__file__).read()
    imports = {line.split()[1] for line in source.splitlines() if line.startswith(("import ", "from "))}
    assert imports == {
        "fcntl",
        "hashlib",
        "hmac",
        "json",
        "os",
        "pwd",
        "re",
        "secrets",
        "select",
        "socket",
        "struct",
        "subprocess",
        "sys",
        "time",
    }


def test_a_stream_that_goes_silent_is_ended_so_the_receive_keeps_what_came(tmp_path):
    """A cut link leaves sshd's side open for hours: after `idle` seconds without a byte the helper ends the stream
    itself (here into `cat`, standing in for zfs receive), and what came is delivered."""
    out = tmp_path / "got"
    code = f"import sys; from hostlib.recv_helper import pump; sys.exit(pump(['sh', '-c', 'cat > {out}'], 2))"
    started = time.monotonic()
    helper = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
    helper.stdin.write(b"x" * 100000)
    helper.stdin.flush()  # and then nothing more, the pipe left open
    assert helper.wait(timeout=20) == 0
    assert 2 <= time.monotonic() - started < 10
    assert out.read_bytes() == b"x" * 100000
    assert b"nothing came for 2 s" in helper.stderr.read()
    helper.stdin.close()


def test_a_second_receive_into_the_same_dataset_waits_for_the_first_to_end(tmp_path, monkeypatch):
    monkeypatch.setattr(recv_helper, "HOMES", str(tmp_path))
    (tmp_path / "pair-7" / "locks").mkdir(parents=True)
    first = recv_helper.one_at_a_time(7, "backup/lab/docs", wait=1)
    started = time.monotonic()
    with pytest.raises(Refused, match="still running"):
        recv_helper.one_at_a_time(7, "backup/lab/docs", wait=0.5)
    assert time.monotonic() - started >= 0.5
    other = recv_helper.one_at_a_time(7, "backup/lab/other", wait=0.5)  # another dataset is not held up
    os.close(first)
    again = recv_helper.one_at_a_time(7, "backup/lab/docs", wait=0.5)
    os.close(again)
    os.close(other)


def test_a_receives_lock_is_in_its_pairs_own_folder_and_never_followed_through_a_link(tmp_path, monkeypatch):
    """Not /run/lock (anyone may write there, and hold a lock Tarn waits on): the pair's user's own folder; a link
    planted at a lock's name is not opened."""
    monkeypatch.setattr(recv_helper, "HOMES", str(tmp_path))
    assert recv_helper.lock_path(7, "backup/lab/docs").startswith(f"{tmp_path}/pair-7/locks/")
    (tmp_path / "pair-7" / "locks").mkdir(parents=True)
    elsewhere = tmp_path / "elsewhere"
    os.symlink(elsewhere, recv_helper.lock_path(7, "backup/lab/docs"))
    with pytest.raises(OSError):
        recv_helper.one_at_a_time(7, "backup/lab/docs", wait=0.2)
    assert not elsewhere.exists()


@pytest.fixture
def pair_user():
    """A pair's user on this machine, as pairing makes one on a NAS (replication.receiver_prepare's useradd)."""
    user = "tarn-recv-4242"
    subprocess.run(["userdel", user], capture_output=True)
    subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/bin/sh", user], check=True)
    yield 4242
    subprocess.run(["userdel", user], check=True)


def test_tarn_sees_whether_a_receive_still_holds_its_dataset(monkeypatch, pair_user):
    """receive_busy runs flock(1) as the pair's user against tarn-recv's own lock: held while a receive runs, free
    once it ended."""
    homes = Path(tempfile.mkdtemp(prefix="tarn-recv-homes."))  # in /tmp: a folder the user can reach
    homes.chmod(0o755)
    monkeypatch.setattr(recv_helper, "HOMES", str(homes))
    locks = homes / f"pair-{pair_user}" / "locks"
    locks.mkdir(parents=True)
    (homes / f"pair-{pair_user}").chmod(0o755)
    shutil.chown(locks, f"tarn-recv-{pair_user}", f"tarn-recv-{pair_user}")
    local = LocalTransport()
    assert replication.receive_busy(local, pair_user, "backup/lab/docs") is False
    held = recv_helper.one_at_a_time(pair_user, "backup/lab/docs", wait=1)
    try:
        assert replication.receive_busy(local, pair_user, "backup/lab/docs") is True
        assert replication.receive_busy(local, pair_user, "backup/lab/other") is False
    finally:
        os.close(held)
    assert replication.receive_busy(local, pair_user, "backup/lab/docs") is False
    with pytest.raises(ValueError):
        replication.receive_busy(local, pair_user, "-o x")
    shutil.rmtree(homes)


def _become(pair):
    """recv_helper.unprivileged(pair) in a child process (it gives up root for good): its uid, or its refusal."""
    code = (
        "import os, sys\n"
        "from hostlib import recv_helper\n"
        "try:\n"
        f"    recv_helper.unprivileged({pair})\n"
        "except recv_helper.Refused as r:\n"
        "    sys.exit(f'refused: {r}')\n"
        "print(os.getuid(), os.geteuid(), os.getgroups())\n"
    )
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)


def test_started_as_root_it_becomes_the_pairs_user_before_reading_a_byte(pair_user):
    done = _become(pair_user)
    uid = int(subprocess.run(["id", "-u", f"tarn-recv-{pair_user}"], capture_output=True, text=True).stdout)
    assert done.returncode == 0 and done.stdout.split()[:2] == [str(uid), str(uid)] and "[]" in done.stdout
    missing = _become(4243)
    assert missing.returncode and "there is no user tarn-recv-4243 on this NAS: pair again" in missing.stderr


def _listening(client="127.0.0.1", wait=20):
    """tarn-recv's listen in a thread, as on the target; (its words on the ssh channel, the result holder, thread)."""
    said_r, said_w = os.pipe()
    got = {}

    def receiver():
        with os.fdopen(said_w, "w") as out:
            try:
                got["fd"] = recv_helper.listen(f"{client} 50000 127.0.0.1 22", out=out, wait=wait)
            except Refused as refused:
                got["refused"] = str(refused)

    thread = threading.Thread(target=receiver)
    thread.start()
    text = os.read(said_r, 200)
    os.close(said_r)
    return text, got, thread


def _connect(port, source="127.0.0.1"):
    conn = socket.socket()
    conn.settimeout(5)  # a check that broke fails here instead of hanging
    conn.bind((source, 0))
    conn.connect(("127.0.0.1", port))
    return conn


def _closed(sock) -> bool:
    """Closed by the other end: an end of stream, or a reset (closed with what was sent still unread)."""
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True


def test_a_tcp_stream_is_taken_only_from_the_senders_address_and_only_with_the_nonce():
    """tcp: the helper says port and nonce on its ssh channel. A connection from another address is closed
    unread; one from the sender's address with a wrong nonce is closed once all 64 characters came (never a
    byte-by-byte answer); silent ones hold up nothing; the sender's (send_helper.data_connection, reading that
    line) is the stream, even with its nonce in two pieces."""
    text, got, thread = _listening()
    line = text.decode().split()
    assert line[:2] == ["tarn-recv", "listening"] and len(line[3]) == 2 * recv_helper.NONCE
    port, nonce = int(line[2]), line[3].encode()
    elsewhere = _connect(port, "127.0.0.2")
    elsewhere.sendall(nonce)  # the nonce itself, from another address
    assert _closed(elsewhere), "closed unread"
    silent = [_connect(port) for _ in range(3)]  # they never speak
    wrong = _connect(port)
    wrong.sendall(nonce[:10])
    with pytest.raises(TimeoutError):  # a right first part is not answered...
        wrong.settimeout(0.5)
        wrong.recv(1)
    wrong.settimeout(5)
    wrong.sendall(b"0" * (len(nonce) - 10))
    assert _closed(wrong), "...and a wrong whole is closed"
    again_r, again_w = os.pipe()  # the line as tarn-send reads it from the ssh session
    os.write(again_w, text)
    conn = send_helper.data_connection(os.fdopen(again_r, "rb"), "127.0.0.1", wait=5)
    conn.sendall(b"the stream")
    conn.close()
    thread.join(timeout=10)
    with socket.socket(fileno=got["fd"]) as stream:
        assert stream.recv(100) == b"the stream"
    for sock in (*silent, wrong, elsewhere):
        assert _closed(sock), "the others closed once the stream was found"
        sock.close()
    os.close(again_w)


def test_a_nonce_in_two_pieces_is_the_stream_too():
    text, got, thread = _listening()
    port, nonce = int(text.split()[2]), text.split()[3]
    conn = _connect(port)
    conn.sendall(nonce[:7])
    time.sleep(0.2)
    conn.sendall(nonce[7:] + b"data")
    conn.close()
    thread.join(timeout=10)
    with socket.socket(fileno=got["fd"]) as stream:
        assert stream.recv(100) == b"data"


def test_no_connection_with_the_nonce_in_time_is_refused():
    with pytest.raises(Refused, match="no connection from 10.0.0.9 with the nonce within 0.3 s"):
        recv_helper.listen("10.0.0.9 50000 127.0.0.1 22", out=io.StringIO(), wait=0.3)


STREAMS = ROOT / "tests" / "fixtures" / "host" / "replication" / "streams"


def head_of(name: str):
    """stream_head over the first 4 KiB of a stream captured on the lab guest (MANIFEST.json says how)."""
    data = (STREAMS / f"{name}.head").read_bytes()
    taken, head = recv_helper.stream_head(_reading(data))
    assert taken == data[: len(taken)], "what was read is handed on to zfs receive as it came"
    return head


@pytest.mark.parametrize(
    "name, fromguid, volume",
    [
        ("full-raw", False, False),
        ("incremental-i-raw", True, False),
        ("incremental-I-raw", True, False),  # a compound stream without a package: -I's
        ("volume-raw", False, True),
        ("encrypted-raw", False, False),  # its BEGIN carries the wrapped key: a payload of its own, taken
        ("not-raw", False, False),
        ("resume-full-raw", False, False),
    ],
)
def test_the_streams_tarn_sends_are_taken_and_say_what_they_are(name, fromguid, volume):
    head = head_of(name)
    assert bool(head.fromguid) == fromguid and head.volume == volume and head.toguid


@pytest.mark.parametrize(
    "name, says",
    [
        ("props-p", "carries properties, holds or children"),  # sharenfs, setuid… would come with it
        ("replicate-R", "carries properties, holds or children"),  # children, relocated by guid on receive
        ("holds-h", "carries properties, holds or children"),  # holds that would stall the target's retention
        ("clone-origin", "makes a clone"),  # an origin found by guid anywhere in the pool
    ],
)
def test_a_stream_with_a_package_or_a_clone_is_refused_before_zfs_receive_sees_a_byte(name, says):
    with pytest.raises(Refused, match=says):
        head_of(name)


def test_garbage_a_cut_head_or_another_byte_order_is_refused():
    full = (STREAMS / "full-raw.head").read_bytes()
    swapped = bytearray(full)
    swapped[8:16] = full[8:16][::-1]  # the magic as a big-endian host writes it
    for data, says in [(b"\0" * 312, "not a ZFS send stream"), (bytes(swapped), "not a ZFS send stream"),
                       (full[:100], "before its head was read")]:  # fmt: skip
        with pytest.raises(Refused, match=says):
            recv_helper.stream_head(_reading(data))


def _reading(data: bytes):
    """read(n) over data, as recv_helper.reader reads a stream: exactly n bytes, or Refused."""
    at = 0

    def read(n):
        nonlocal at
        if at + n > len(data):
            raise Refused("the stream ended (or went silent) before its head was read")
        at += n
        return data[at - n : at]

    return read


@pytest.mark.parametrize(
    "name, present, says",
    [
        ("full-raw", None, ""),  # the first stream into a new replica
        ("incremental-I-raw", "-", ""),  # the next ones into it
        ("resume-full-raw", "1-abc-de-f0", ""),  # a first stream cut short, resumed where its state is
        ("full-raw", "-", "a full stream into a dataset that exists"),  # never replaced (and no -F)
        ("incremental-i-raw", None, "an incremental stream into a dataset the target does not have"),
    ],
)
def test_whether_a_stream_is_the_first_is_the_targets_to_say(name, present, says):
    if not says:
        recv_helper.check_fits(head_of(name), present)
        return
    with pytest.raises(Refused, match=says):
        recv_helper.check_fits(head_of(name), present)
