"""tarn-recv: the only thing a replication key may do on the receiving NAS.

Installed root-owned at RECV_PATH and named in the key's authorized_keys line as its forced command:

    restrict,from="<sender's address>",command="/usr/bin/python3 <RECV_PATH> <pair> <target root>" ssh-ed25519 …

so whatever command the sender's ssh asks for, sshd runs this instead and hands the request over in
SSH_ORIGINAL_COMMAND. That text is read as data (one JSON object), never run: the receive argv is built here, into
the configured root only, without -F (nothing on the target is ever rolled back or destroyed by a key).

Requests: {"verb": "hello"} (Tarn's check of a new pair: answers "tarn-recv <pair> <root>"),
          {"verb": "receive", "dataset": "<path below the root, or empty for the root>", "first": true|false,
           "idle": seconds, "tcp": true|false}
          (first: the initial full stream; the replica is made read-only and never mounted by the receive.
           idle: when no byte has come for that long (a cut link sshd would not notice for hours), the stream is
           ended here, so zfs receive keeps what it has for a resume instead of holding the dataset busy.
           tcp: the stream comes in the clear over a TCP connection of its own instead of through ssh, for a
           trusted link where ssh's cipher costs more CPU than the link allows: this helper listens on the address
           the ssh connection came in on, says "tarn-recv listening <port> <nonce>" on stdout (through the
           authenticated ssh channel), and takes the first connection from the sender's address that starts with
           the nonce; nothing else, and nothing after 30 s.)

Self-contained (standard library only): Tarn writes this file's source to the NAS.
"""

import fcntl
import hashlib
import hmac
import json
import os
import re
import secrets
import select
import socket
import subprocess
import sys
import time

RECV_PATH = "/usr/local/lib/tarn/tarn-recv"
_COMPONENT = re.compile(r"[A-Za-z0-9_.:-]{1,255}")
_PAIR = re.compile(r"[0-9]{1,12}")
MAX_REQUEST = 4096
IDLE = 60
CHUNK = 1 << 20
LOCKS = "/run/lock"


class Refused(Exception):
    pass


def _dataset(root, relative):
    """root, or root/relative when every part of relative is a plain ZFS name component."""
    if not relative:
        return root
    parts = relative.split("/")
    for part in parts:
        if not _COMPONENT.fullmatch(part) or part.startswith("-") or part in (".", ".."):
            raise Refused(f"not a dataset path below the target: {relative!r}")
    name = f"{root}/{relative}"
    if len(name) > 255:
        raise Refused("the dataset name is longer than ZFS allows")
    return name


def receive_argv(root, request):
    """The argv for one request, or Refused with the reason."""
    if not isinstance(request, dict) or request.get("verb") != "receive":
        raise Refused("this key may only receive")
    if set(request) - FIELDS:
        raise Refused(f"unknown fields: {sorted(set(request) - FIELDS)}")
    if type(request.get("tcp", False)) is not bool:
        raise Refused("tcp is true or false")
    relative, first = request.get("dataset", ""), request.get("first", False)
    if not isinstance(relative, str) or not isinstance(first, bool):
        raise Refused("dataset is a string, first is true or false")
    idle = request.get("idle", IDLE)
    if type(idle) is not int or not 2 <= idle <= 3600:
        raise Refused("idle is whole seconds from 2 to 3600")
    target = _dataset(root, relative)
    # -s: a cut transfer leaves a resume token; -u: never mounted by the receive; -x mountpoint: the sender's
    # mountpoint (if its stream carries one) is never applied here.
    argv = ["zfs", "receive", "-s", "-u", "-x", "mountpoint"]
    if first:
        argv += ["-o", "readonly=on"]
    return [*argv, "--", target]


def pump(command, idle, source=0):
    """The stream on source (stdin, or a TCP connection's fd) into `zfs receive` (os.splice: the bytes never pass
    through Python) until it ends, or until nothing has come for idle seconds; then zfs receive sees the end and
    keeps a partial stream's state."""
    child = subprocess.Popen(command, stdin=subprocess.PIPE)
    gather, last = wide(source, child.stdin.fileno()), time.monotonic()
    try:
        while True:
            ready, _, _ = select.select([source], [], [], idle)
            if not ready:
                print(f"tarn-recv: nothing came for {idle} s; the stream is ended here", file=sys.stderr)
                break
            moved = os.splice(source, child.stdin.fileno(), CHUNK)
            if moved == 0:
                break
            now = time.monotonic()
            if gather and moved * GATHER < GATHER_BELOW * (now - last):  # it comes slower than the pipe drains
                time.sleep(GATHER)
            last = time.monotonic()
    except OSError as exc:  # zfs receive stopped reading, or the sender's connection went (reset, timed out…)
        if not isinstance(exc, BrokenPipeError):  # zfs receive's exit status and words say why it stopped
            print(f"tarn-recv: the stream's connection failed: {exc.strerror or exc}", file=sys.stderr)
    finally:
        child.stdin.close()
    return child.wait()


PIPE = 1 << 20
GATHER, GATHER_BELOW = 0.05, 512 << 10


def wide(*fds):
    """Widen both pipes to a mebibyte; True if they are. A stream that comes slower than GATHER_BELOW per GATHER s
    (10 MiB/s; ssh hands over its channel's packets, 32 KiB each) then waits GATHER s after each move: a wake-up per
    ~half mebibyte instead of per packet (on a busy NAS the wake-ups, not the bytes, cost). It never slows the
    stream: at such a rate a wide pipe never fills in GATHER s, and a faster one never waits."""
    widened = True
    for fd in fds:
        try:
            fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, PIPE)
        except OSError:
            widened = False  # not a pipe (sshd may hand over a socket, tcp is one): the others all the same
    return widened


FIELDS = {"verb", "dataset", "first", "idle", "tcp"}
ACCEPT_SECONDS = 30
NONCE = 32  # bytes the sender's connection starts with (hex: 64 characters)


def listen(ssh_connection, out=None, wait=ACCEPT_SECONDS):
    """The stream's own TCP connection: listen on the address the ssh session came in on (SSH_CONNECTION:
    "client port server port"), say port and nonce on the authenticated channel (out), take the first connection
    from the client's address that opens with the nonce. A connection from any other address is closed unread; the
    client's are read side by side (a silent one holds up no other), each judged once all 64 characters came (no
    byte-by-byte answer to guess from). Its fd, or Refused after wait seconds."""
    client, _, server, _ = ssh_connection.split()
    family = socket.AF_INET6 if ":" in server else socket.AF_INET
    nonce = secrets.token_hex(NONCE).encode()
    pending = {}  # socket -> what it has said so far
    with socket.socket(family, socket.SOCK_STREAM) as listener:
        listener.bind((server, 0))
        listener.listen(16)
        out = out or sys.stdout
        out.write(f"tarn-recv listening {listener.getsockname()[1]} {nonce.decode()}\n")
        out.flush()
        deadline = time.monotonic() + wait
        try:
            while (left := deadline - time.monotonic()) > 0:
                ready, _, _ = select.select([listener, *pending], [], [], left)
                for sock in ready:
                    if sock is listener:
                        conn, peer = listener.accept()
                        if peer[0] == client and len(pending) < 16:
                            pending[conn] = b""
                        else:
                            conn.close()  # another address: not even read
                        continue
                    try:
                        said = pending[sock] + sock.recv(len(nonce) - len(pending[sock]))
                    except OSError:  # reset by its peer: as if closed
                        said = pending[sock]
                    if len(said) < len(nonce) and said != pending[sock]:
                        pending[sock] = said  # not all of it yet (nothing is told before it all came)
                        continue
                    del pending[sock]
                    if hmac.compare_digest(said, nonce):
                        return sock.detach()
                    sock.close()  # closed early, or not the nonce
        finally:
            for sock in pending:
                sock.close()
    raise Refused(f"no connection from {client} with the nonce within {wait} s")


def lock_path(target):
    """The file a receive into target holds locked for as long as it runs (Tarn checks it before reading a token)."""
    return f"{LOCKS}/tarn-recv-{hashlib.sha256(target.encode()).hexdigest()[:24]}.lock"


def one_at_a_time(target, wait):
    """Hold the target's lock for as long as this process lives. A receive cut on the sender's side can still be
    running here (its resume token already shows); a resume waits for it to end (its idle limit) instead of racing
    it, and after `wait` seconds is refused."""
    fd = os.open(lock_path(target), os.O_RDWR | os.O_CREAT, 0o600)
    deadline = time.monotonic() + wait
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            if time.monotonic() > deadline:
                raise Refused(f"a receive into {target} is still running") from None
            time.sleep(0.2)


def main(argv, environ):
    if len(argv) != 3 or not _PAIR.fullmatch(argv[1]):
        raise Refused("usage: tarn-recv <pair> <target root>")
    root = argv[2]
    if not root or root.startswith("-") or any(not _COMPONENT.fullmatch(p) for p in root.split("/")):
        raise Refused(f"not a dataset: {root!r}")
    text = environ.get("SSH_ORIGINAL_COMMAND", "")
    if len(text) > MAX_REQUEST:
        raise Refused("the request is too long")
    try:
        request = json.loads(text)
    except ValueError:
        raise Refused("the request is not JSON") from None
    if request == {"verb": "hello"}:
        return None, 0, False
    return receive_argv(root, request), request.get("idle", IDLE), request.get("tcp", False)


if __name__ == "__main__":
    try:
        command, idle, tcp = main(sys.argv, os.environ)
    except Refused as refused:
        print(f"tarn-recv: refused: {refused}", file=sys.stderr)
        sys.exit(3)
    if command is None:
        print(f"tarn-recv {sys.argv[1]} {sys.argv[2]}")
        sys.exit(0)
    try:
        lock = one_at_a_time(command[-1], wait=idle + 30)
    except Refused as refused:
        print(f"tarn-recv: refused: {refused}", file=sys.stderr)
        sys.exit(4)
    source = 0
    if tcp:
        try:
            source = listen(os.environ.get("SSH_CONNECTION", ""))
        except (Refused, OSError, ValueError) as refused:
            print(f"tarn-recv: refused: {refused}", file=sys.stderr)
            sys.exit(4)
    os.environ.update(LC_ALL="C", PATH="/usr/sbin:/usr/bin:/sbin:/bin")
    sys.exit(pump(command, idle, source))
