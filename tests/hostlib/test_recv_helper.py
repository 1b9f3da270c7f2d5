"""tarn-recv, the replication key's forced command: the request is data, the argv is its own, into its root only."""

import io
import json
import os
import socket
import subprocess
import sys
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


def test_a_first_receive_goes_below_the_root_read_only_and_unmounted():
    command, idle, tcp = main(["tarn-recv", "7", "backup/lab"], request(dataset="tank/docs", first=True))
    assert tcp is False
    assert idle == recv_helper.IDLE
    assert command == [
        "zfs",
        "receive",
        "-s",
        "-u",
        "-x",
        "mountpoint",
        "-o",
        "readonly=on",
        "--",
        "backup/lab/tank/docs",
    ]
    later, idle, tcp = main(["tarn-recv", "7", "backup/lab"], request(dataset="", idle=5, tcp=True))
    assert tcp is True
    assert idle == 5
    assert later == ["zfs", "receive", "-s", "-u", "-x", "mountpoint", "--", "backup/lab"]
    assert "-F" not in later


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
        (request(dataset="x", first="yes"), "true or false"),
        (request(dataset="x", tcp="yes"), "tcp is true or false"),
        (request(dataset="x", idle=1), "idle is whole seconds"),
        (request(dataset="x", idle=True), "idle is whole seconds"),
        (request(dataset="x", idle="60"), "idle is whole seconds"),
        (request(dataset=["x"]), "is a string"),
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
        "re",
        "secrets",
        "select",
        "socket",
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
    monkeypatch.setattr(recv_helper, "LOCKS", str(tmp_path))
    first = recv_helper.one_at_a_time("backup/lab/docs", wait=1)
    started = time.monotonic()
    with pytest.raises(Refused, match="still running"):
        recv_helper.one_at_a_time("backup/lab/docs", wait=0.5)
    assert time.monotonic() - started >= 0.5
    other = recv_helper.one_at_a_time("backup/lab/other", wait=0.5)  # another dataset is not held up
    os.close(first)
    again = recv_helper.one_at_a_time("backup/lab/docs", wait=0.5)
    os.close(again)
    os.close(other)


def test_tarn_sees_whether_a_receive_still_holds_its_dataset(tmp_path, monkeypatch):
    """receive_busy runs flock(1) against tarn-recv's own lock: held while a receive runs, free once it ended."""
    monkeypatch.setattr(recv_helper, "LOCKS", str(tmp_path))
    local = LocalTransport()
    assert replication.receive_busy(local, "backup/lab/docs") is False
    held = recv_helper.one_at_a_time("backup/lab/docs", wait=1)
    try:
        assert replication.receive_busy(local, "backup/lab/docs") is True
        assert replication.receive_busy(local, "backup/lab/other") is False
    finally:
        os.close(held)
    assert replication.receive_busy(local, "backup/lab/docs") is False
    with pytest.raises(ValueError):
        replication.receive_busy(local, "-o x")


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
