"""The SSH transport against a real sshd on this machine."""

import json
import os
import socket
import struct
import threading
import time
from pathlib import Path

import pytest

from hostlib import errors, runner
from hostlib.runner import SSHTransport, retry_after_mux_failure, ssh_keyscan
from tests.hostlib.test_runner_local import ECHO_ARGV, ENV_ARGV, HOSTILE
from tests.support.sshd import free_port, keygen

pytestmark = pytest.mark.integration


def transport(sshd, tmp_path, **kwargs):
    defaults = dict(
        address="127.0.0.1",
        port=sshd.port,
        user="root",
        identity_file=str(sshd.client_key),
        host_keys=[sshd.host_pub],
        state_dir=str(tmp_path / "state"),
        connect_timeout=5,
    )
    return SSHTransport(**{**defaults, **kwargs})


def test_hostile_strings_arrive_unchanged_as_single_arguments(sshd, tmp_path):
    t = transport(sshd, tmp_path)
    try:
        assert json.loads(t.run([*ECHO_ARGV, *HOSTILE]).stdout) == HOSTILE
    finally:
        t.close()


def test_remote_commands_run_with_the_c_locale(sshd, tmp_path):
    t = transport(sshd, tmp_path)
    out = t.run(["python3", "-c", "import os; print(os.environ['LC_ALL'])"]).stdout
    t.close()
    assert out.strip() == "C"


def test_an_allowed_variable_reaches_the_remote_command_with_stdin(sshd, tmp_path):
    t = transport(sshd, tmp_path)
    try:
        assert t.run(ENV_ARGV, env={"PASSWD_FD": "0"}, input="s3cret\n").stdout.split() == ["0", "s3cret"]
        assert t.run(ENV_ARGV, input="x\n").stdout.split() == ["None", "x"]
    finally:
        t.close()


def test_remote_errors_are_typed_like_local_ones(sshd, tmp_path):
    t = transport(sshd, tmp_path)
    with pytest.raises(errors.Busy) as caught:
        t.run(["python3", "-c", "import sys; sys.stderr.write('pool is busy\\n'); sys.exit(1)"])
    t.close()
    assert str(caught.value) == "python3: pool is busy"


def test_timeout_applies_over_ssh_and_stops_the_remote_command(sshd, tmp_path):
    t = transport(sshd, tmp_path)
    marker = f"tarn-timeout-marker-{time.time_ns()}"
    started = time.monotonic()
    with pytest.raises(errors.CommandTimeout):
        t.run(["python3", "-c", f"import time; time.sleep(30)  # {marker}"], timeout=2)
    t.close()
    assert time.monotonic() - started < 8
    time.sleep(0.5)
    assert not [p for p in Path("/proc").glob("[0-9]*/cmdline") if _reads(p).count(marker)]  # sshd is local


def _reads(path: Path) -> str:
    try:
        return path.read_bytes().decode(errors="replace")
    except OSError:
        return ""


def test_keyscan_returns_the_servers_key(sshd):
    assert sshd.host_pub in ssh_keyscan("127.0.0.1", sshd.port)


def test_a_changed_host_key_is_refused(sshd, tmp_path):
    keygen(tmp_path / "other")
    other = " ".join((tmp_path / "other.pub").read_text().split()[:2])
    t = transport(sshd, tmp_path, host_keys=[other])
    with pytest.raises(errors.HostKeyMismatch):
        t.run(["true"])


def test_an_unreachable_host_fails_clearly_after_the_timeout(tmp_path):
    port = free_port()  # nothing listens here
    t = SSHTransport(
        address="127.0.0.1",
        port=port,
        identity_file="/dev/null",
        host_keys=["ssh-ed25519 AAAA"],
        state_dir=str(tmp_path),
        connect_timeout=2,
    )
    started = time.monotonic()
    with pytest.raises(errors.HostUnreachable) as caught:
        t.run(["true"], timeout=10)
    assert time.monotonic() - started < 10
    assert f"127.0.0.1:{port}" in str(caught.value)


def test_write_file_over_ssh_is_atomic_and_reports_change(sshd, tmp_path):
    target_dir = tmp_path / "etc"
    t = transport(sshd, tmp_path, writable_dirs=(str(target_dir),))
    hostile = "line with 'quotes' and $(id) and `id`\n; rm -rf /\n"
    assert t.write_file(str(target_dir / "x.conf"), hostile, mode=0o600) is True
    assert t.write_file(str(target_dir / "x.conf"), hostile, mode=0o600) is False
    assert (target_dir / "x.conf").read_text() == hostile
    assert (target_dir / "x.conf").stat().st_mode & 0o777 == 0o600
    with pytest.raises(errors.PathNotAllowed):
        t.write_file(str(tmp_path / "outside.conf"), "x")
    t.close()
    assert not (tmp_path / "outside.conf").exists()


def test_read_only_refuses_mutations_over_ssh(sshd, tmp_path):
    t = transport(sshd, tmp_path, read_only=True)
    with pytest.raises(errors.ReadOnlyHost):
        t.run(["true"], mutating=True)
    assert t.run(["true"]).returncode == 0
    t.close()


def _dying_master(path: str) -> threading.Thread:
    """A control socket that answers ssh's hello and alive check like a master, then goes away before the
    session request: what a client meets when the host behind the master was rebooted or restored."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(1)

    def packet(*words: int) -> bytes:
        body = b"".join(struct.pack(">I", w) for w in words)
        return struct.pack(">I", len(body)) + body

    def read_packet(conn) -> bytes:
        size = struct.unpack(">I", conn.recv(4, socket.MSG_WAITALL))[0]
        return conn.recv(size, socket.MSG_WAITALL)

    def serve():
        conn, _ = listener.accept()
        os.unlink(path)  # the next client finds no master and makes its own connection
        listener.close()
        conn.sendall(packet(0x00000001, 4))  # MUX_MSG_HELLO, protocol 4
        read_packet(conn)  # the client's hello
        request_id = struct.unpack(">II", read_packet(conn)[:8])[1]  # MUX_C_ALIVE_CHECK
        conn.sendall(packet(0x80000005, request_id, os.getpid()))  # MUX_S_ALIVE
        conn.close()  # gone before the session request is written

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return thread


def test_a_command_meeting_a_dying_shared_connection_is_sent_again(sshd, tmp_path):
    t = transport(sshd, tmp_path)
    master = _dying_master(t._control_path())
    try:
        # A change too: the session request never reached the master, so sending it again cannot run it twice.
        assert t.run(["python3", "-c", "print('arrived')"], mutating=True).stdout.strip() == "arrived"
    finally:
        t.close()
    master.join(timeout=5)
    assert not master.is_alive()  # the command really met the dying master first


@pytest.mark.parametrize(
    "stderr, mutating, again",
    [
        ("mux_client_request_session: write packet: Broken pipe", True, True),  # CI, after a lab restore
        ("mux_client_request_alive: write packet: Broken pipe", True, True),
        ("mux_client_hello_exchange: read packet failed", True, True),
        ("mux_client_request_session: read from master failed: Connection reset by peer", False, True),
        # The request had reached the master: a change may have run, so it is not sent twice.
        ("mux_client_request_session: read from master failed: Connection reset by peer", True, False),
        ("zpool: cannot open 'tank': no such pool", False, False),
    ],
)
def test_only_commands_that_cannot_have_run_are_sent_again_after_a_mux_failure(stderr, mutating, again):
    assert retry_after_mux_failure(255, stderr, mutating=mutating) is again
    assert retry_after_mux_failure(1, stderr, mutating=mutating) is False


def test_output_past_the_cap_stops_the_call_over_ssh_too(sshd, tmp_path):
    t = transport(sshd, tmp_path)
    try:
        with pytest.raises(errors.OutputTooLarge):
            t.run(["cat", "--", "/dev/zero"], timeout=60, max_output=4 << 20)
        assert t.run(["true"]).returncode == 0  # the connection is still good for the next command
    finally:
        t.close()


def test_a_tool_the_host_lacks_is_a_typed_error_over_ssh_too(sshd, tmp_path):
    t = transport(sshd, tmp_path, extra_tools=frozenset({"tarn-no-such-tool"}))
    try:
        with pytest.raises(errors.ToolMissing, match="^tarn-no-such-tool is not installed on this host$"):
            t.run(["tarn-no-such-tool", "--version"])
    finally:
        t.close()


def test_commands_started_together_share_the_one_connection_the_first_makes(sshd, tmp_path):
    t = transport(sshd, tmp_path)
    t.close()  # no shared connection yet
    seen = []

    def one():
        argv = ["python3", "-c", "import os, time; time.sleep(0.3); print(os.environ['SSH_CONNECTION'])"]
        seen.append(t.run(argv).stdout.strip())

    threads = [threading.Thread(target=one) for _ in range(4)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=30)
    finally:
        t.close()
    # SSH_CONNECTION names the client's TCP port: one value, one connection (one handshake) for all four.
    assert len(seen) == 4 and len(set(seen)) == 1, seen


def test_a_kept_program_over_ssh_rides_the_shared_connection_and_ends_when_tarn_ends_it(sshd, tmp_path):
    t = transport(sshd, tmp_path)
    t.close()
    runner.forget_conversations()
    program = [
        "python3",
        "-c",
        "import os, sys\nfor line in sys.stdin: print(os.getpid(), os.environ['SSH_CONNECTION'], flush=True)",
    ]
    try:
        with runner.kept(t, program, longest=30) as talk:
            assert talk is None  # no shared connection yet: the usual way makes it
        shared = t.run(["python3", "-c", "import os; print(os.environ['SSH_CONNECTION'])"]).stdout.strip()
        with runner.kept(t, program, longest=30) as talk:
            pid, connection = talk.ask(b"?", timeout=30).decode().split(" ", 1)
            assert connection == shared  # the one connection, no handshake of its own
        with runner.kept(t, program, longest=30) as again:
            assert again.ask(b"?", timeout=30).decode().split(" ", 1)[0] == pid  # the same program, kept
        assert runner.forget_conversations() == 1
        gone = t.run(["python3", "-c", f"import os, time; time.sleep(1); print(os.path.exists('/proc/{pid}'))"])
        assert gone.stdout.strip() == "False"  # ended on the host too
    finally:
        runner.forget_conversations()
        t.close()
