"""tarn-send: one replication run's transfers, run on the NAS that dials as a transient systemd unit (it outlives the
worker that started it; the worker follows its progress file and, if it dies, a new one finds the unit by name).

    python3 SEND_PATH <spec.json>
    python3 SEND_PATH --wait <progress.json> <seconds>   (Tarn's look: the progress once the run ends, or after
                                                          that many seconds, whichever comes first)

The spec (written by Tarn, root's alone) lists the steps, each a `zfs send` argv (built by hostlib.replication) and
the receive request the target's tarn-recv gets as data (for a pull pair, "pull": {"pair", "root"}: this NAS is
the receiver and dials the sender's tarn-serve, see ends); the pair's key, pinned host key and cipher, and how soon
a silent link counts as cut (ssh's alive probes here, tarn-recv's idle limit there); the bandwidth limit; where to
write progress. Each step pipes `zfs send` into `ssh` with os.splice (the bytes never pass through
Python) and counts them on the way; with "tcp" in the ssh part, ssh carries the request and the receive's words
and the stream goes into a TCP connection of its own (see data_connection and tarn-recv's listen); a limit is a token bucket with a small burst (a tenth of a second's worth),
so the rate holds per second, not only on average.

Progress (JSON, replaced atomically about once a second): {"state": "running" | "done" | "failed", "step": i,
"steps": n, "snapshot": …, "bytes": this step's, "total": all steps', "rate": bytes/s over the last second,
"started": unix time of the first byte's step, "updated": unix time, "data": where a tcp step's stream went, and when
it ends "send_exit", "recv_exit", "stderr": both ends' last lines}.

Self-contained (standard library only): Tarn writes this file's source to the NAS.
"""

import fcntl
import json
import os
import select
import socket
import subprocess
import sys
import tempfile
import time

SEND_PATH = "/usr/local/lib/tarn/tarn-send"
RECV_PATH = "/usr/local/lib/tarn/tarn-recv"  # run here as its forced command would be, for a pull
CHUNK = 1 << 20
TAIL = 4000  # characters of each end's stderr kept for the run's log


class Progress:
    def __init__(self, path, steps):
        self.path = path
        self.state = {"state": "running", "step": 0, "steps": steps, "bytes": 0, "total": 0, "started": time.time()}
        self.last_write, self.window = 0.0, (time.monotonic(), 0)

    def moved(self, n):
        self.state["bytes"] += n
        self.state["total"] += n
        now = time.monotonic()
        if now - self.last_write >= 1.0:
            since, before = self.window
            self.state["rate"] = int((self.state["total"] - before) / max(now - since, 1e-3))
            self.window = (now, self.state["total"])
            self.write()

    def write(self, **fields):
        self.state.update(fields, updated=time.time())
        self.last_write = time.monotonic()
        folder = os.path.dirname(self.path)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".progress.")
        with os.fdopen(fd, "w") as fh:
            json.dump(self.state, fh)
        os.replace(tmp, self.path)


class Bucket:
    """A token bucket: at most `rate` bytes a second, bursts up to a tenth of that (or none without a rate)."""

    def __init__(self, rate):
        self.rate, self.capacity = rate, max(rate // 10, 64 << 10)
        self.tokens, self.at = self.capacity, time.monotonic()

    def take(self, want):
        if not self.rate:
            return want
        while True:
            now = time.monotonic()
            self.tokens = min(self.capacity, self.tokens + (now - self.at) * self.rate)
            self.at = now
            if self.tokens >= 1:
                n = int(min(want, self.tokens))
                self.tokens -= n
                return n
            time.sleep(min(0.05, (1 - self.tokens) / self.rate + 0.001))

    def refund(self, n):
        """Tokens taken for bytes that did not move (a short splice)."""
        if self.rate:
            self.tokens += n


def _ssh_options(ssh):
    return [
        "-F",
        "/dev/null",
        "-i",
        ssh["identity"],
        "-o",
        "IdentitiesOnly=yes",
        "-o",
        "BatchMode=yes",
        "-o",
        "StrictHostKeyChecking=yes",
        "-o",
        f"UserKnownHostsFile={ssh['known_hosts']}",
        "-o",
        "GlobalKnownHostsFile=/dev/null",
        "-o",
        f"Ciphers={ssh['cipher']}",
        "-o",
        f"ServerAliveInterval={int(ssh.get('alive', 10))}",
        "-o",
        "ServerAliveCountMax=3",
        "-o",
        "ConnectTimeout=15",
        "-p",
        str(int(ssh["port"])),
        "-l",
        ssh.get("user", "root"),  # a push logs in as tarn-recv (its receives run as that user), a pull as root
    ]


def ssh_argv(ssh, request, control=""):
    """One receive's ssh: on its own connection, or a session on the run's shared one (control)."""
    shared = ["-o", f"ControlPath={control}", "-o", "ControlMaster=no"] if control else []
    # the request travels as data: tarn-recv reads it as JSON, never as a command
    return ["ssh", *_ssh_options(ssh), *shared, "--", ssh["address"], json.dumps(request)]


def master_argv(ssh, control):
    """The run's shared connection (no command: the forced one runs only in each step's session)."""
    return [
        "ssh",
        *_ssh_options(ssh),
        "-o",
        f"ControlPath={control}",
        "-o",
        "ControlMaster=yes",
        "-N",
        "--",
        ssh["address"],
    ]


def shared_connection(ssh, control, wait=20, stderr=subprocess.DEVNULL):
    """Start the run's shared connection; (its process, control) once it is up, or (it, "") when it is not (each
    step then connects on its own, and says why it cannot). Its words (a lost link's "Timeout, server … not
    responding") go to stderr: a step's session on it only ends with 255, saying nothing."""
    master = subprocess.Popen(
        master_argv(ssh, control), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr
    )
    deadline = time.monotonic() + wait
    while not os.path.exists(control) and master.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    return master, control if os.path.exists(control) else ""


LOST = "tarn-send: ssh lost its connection (exit 255)"
PIPE = 1 << 20  # bytes a pipe of a transfer holds (64 KiB by default)
GATHER, GATHER_BELOW = 0.05, 512 << 10


def wide(*fds):
    """Widen the transfer's pipes to a mebibyte; True if they are. A stream that comes slower than GATHER_BELOW per
    GATHER s (10 MiB/s) then waits GATHER s after each move: a wake-up per ~half mebibyte, not per record zfs
    send writes (on a busy NAS the wake-ups, not the bytes, cost). It never slows the stream: at such a rate a wide
    pipe never fills in GATHER s, and a faster one never waits."""
    widened = True
    for fd in fds:
        try:
            fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, PIPE)
        except OSError:
            widened = False  # not a pipe (a socket): the others are widened all the same
    return widened


def _tail(fh):
    fh.seek(0)
    return fh.read().decode(errors="replace")[-TAIL:]


def ends(step, ssh, control="", pull=None):
    """A step's two ends: (sending argv, receiving argv, the receiver's environment or None).
    Push (this NAS sends): `zfs send` here, into ssh to the receiver's tarn-recv.
    Pull (this NAS receives; pull = {"pair", "root"}): ssh to the sender's tarn-serve, which runs the same
    `zfs send` there, into tarn-recv run here exactly as sshd runs it for a push (the request in
    SSH_ORIGINAL_COMMAND): one receive path, one set of checks, whichever side dials."""
    send_argv = step["send"]
    if send_argv[:2] != ["zfs", "send"]:
        raise ValueError("a step sends with zfs send only")
    request = {"verb": "receive", "dataset": step["dataset"]}  # whether it is the first, the receiver decides
    if ssh.get("idle"):
        request["idle"] = int(ssh["idle"])
    if ssh.get("tcp") and not pull:
        request["tcp"] = True  # ssh carries the request and the receive's words, a TCP connection the stream
    if not pull:
        return send_argv, ssh_argv(ssh, request, control), None
    receiver = ["/usr/bin/python3", RECV_PATH, str(int(pull["pair"])), pull["root"]]
    env = {**os.environ, "SSH_ORIGINAL_COMMAND": json.dumps(request)}
    serve = {"verb": "send", "argv": send_argv}
    if ssh.get("idle"):
        serve["idle"] = int(ssh["idle"])  # tarn-serve stops the sender's zfs send when nothing is taken that long
    return ssh_argv(ssh, serve, control), receiver, env


def transfer(step, ssh, bucket, progress, control="", pull=None):
    """One sending-into-receiving pipe (see ends); returns (send's exit, receive's exit, their stderr)."""
    sender, receiver, env = ends(step, ssh, control, pull)
    tcp = bool(ssh.get("tcp")) and not pull
    with tempfile.TemporaryFile() as send_err, tempfile.TemporaryFile() as recv_err:
        send = subprocess.Popen(sender, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=send_err)
        recv = subprocess.Popen(
            receiver,
            stdin=subprocess.DEVNULL if tcp else subprocess.PIPE,
            stdout=subprocess.PIPE if tcp else subprocess.DEVNULL,
            stderr=recv_err,
            env=env,
        )
        conn = None
        try:
            if tcp:
                idle, alive = int(ssh.get("idle", 30)), int(ssh.get("alive", 10))
                conn = data_connection(recv.stdout, ssh["address"], wait=idle + 60, lost=2 * idle + 3 * alive)
                progress.state["data"] = f"tcp {conn.getpeername()[0]} port {conn.getpeername()[1]}"
            src = send.stdout.fileno()
            dst = conn.fileno() if conn else recv.stdin.fileno()
        except (OSError, ValueError) as exc:  # no listening word, or no connection: the receive's words say why
            recv_err.write(f"\ntarn-send: no data connection: {exc}\n".encode())
            src = dst = None
        gather = dst is not None and wide(src, dst) and not bucket.rate  # a limited stream waits for its tokens
        last = time.monotonic()
        try:
            while dst is not None:
                allowed = bucket.take(CHUNK)
                n = os.splice(src, dst, allowed)
                bucket.refund(allowed - n)
                if n == 0:
                    break
                progress.moved(n)
                now = time.monotonic()
                if gather and n * GATHER < GATHER_BELOW * (now - last):  # it comes slower than the pipe drains
                    time.sleep(GATHER)
                last = time.monotonic()
        except OSError as exc:  # the receiving end went away: its exit status and stderr say why
            if conn is not None:  # a data connection's own failure (timed out, or EHOSTUNREACH once ARP gave up)
                recv_err.write(f"\ntarn-send: the data connection failed: {exc.strerror or exc}\n".encode())
        finally:
            if conn is not None:
                conn.close()
            for fh in (recv.stdin, recv.stdout, send.stdout):
                if fh is not None:
                    fh.close()
        recv_exit = recv.wait()
        if send.poll() is None:
            send.terminate()
        send_exit = send.wait()
        said = {"send": _tail(send_err), "receive": _tail(recv_err)}
        side, ssh_exit = ("send", send_exit) if pull else ("receive", recv_exit)
        if ssh_exit == 255 and not said[side].strip():  # ssh's own failure, in a session that says nothing
            said[side] = LOST
        return send_exit, recv_exit, said


def data_connection(said, address, wait=90, lost=90):
    """A tcp step's stream connection: tarn-recv's "tarn-recv listening <port> <nonce>" read from its ssh session
    (said) within wait seconds (longer than tarn-recv may wait for an earlier receive into the dataset to end),
    then a connection to that port which opens with the nonce. Data unacknowledged for `lost` seconds fails it: a
    cut link within a minute or two, not after TCP's ~15 min of retries (lost stays above tarn-recv's idle limit,
    since a zero window counts too: a receive busy for a while must not end a healthy stream)."""
    fd, text, deadline = said.fileno(), b"", time.monotonic() + wait
    while b"\n" not in text and len(text) < 512 and (left := deadline - time.monotonic()) > 0:
        ready, _, _ = select.select([fd], [], [], left)
        more = os.read(fd, 512) if ready else b""
        if not more:
            break
        text += more
    line = text.decode(errors="replace").split("\n")[0].split()
    if line[:2] != ["tarn-recv", "listening"] or len(line) != 4 or not line[2].isdigit():
        raise ValueError("the receiver did not listen")
    conn = socket.create_connection((address, int(line[2])), timeout=30)
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT, int(lost * 1000))
    conn.sendall(line[3].encode())
    conn.settimeout(None)
    return conn


def main(spec_path):
    with open(spec_path) as fh:
        spec = json.load(fh)
    steps = spec["steps"]
    progress = Progress(spec["progress"], len(steps))
    bucket = Bucket(int(spec.get("limit") or 0))
    progress.write()
    master, control, words = None, "", tempfile.TemporaryFile()
    if len(steps) > 1:  # one handshake for the run, not one per dataset (seconds each on a busy NAS)
        mux = f"{os.path.dirname(spec['progress'])}/mux-{os.getpid()}"
        master, control = shared_connection(spec["ssh"], mux, stderr=words)
    try:
        for i, step in enumerate(steps):
            progress.write(step=i, snapshot=step["snapshot"], bytes=0)
            send_exit, recv_exit, stderr = transfer(step, spec["ssh"], bucket, progress, control, spec.get("pull"))
            if send_exit or recv_exit:
                if master is not None:
                    stderr["connection"] = _tail(words)
                progress.write(state="failed", send_exit=send_exit, recv_exit=recv_exit, stderr=stderr)
                return 1
        progress.write(state="done", step=len(steps))
        return 0
    except Exception as exc:  # never leave "running" behind: Tarn would wait for a run that is gone
        progress.write(state="failed", send_exit=-1, recv_exit=-1, stderr={"send": f"tarn-send: {exc!r}"})
        raise
    finally:
        if master is not None:
            master.terminate()
            master.wait()
        words.close()


def wait(progress_path, seconds):
    """The progress as soon as its state is no longer "running" (or the file is gone), else after seconds: one
    command on the sending NAS both waits and reads, and Tarn sees the end of a run when it comes."""
    deadline = time.monotonic() + min(max(float(seconds), 0.0), 60.0)
    while True:
        try:
            with open(progress_path) as fh:
                text = fh.read()
            ended = json.loads(text).get("state") != "running"
        except (OSError, ValueError):
            text, ended = "", False
        if ended or time.monotonic() >= deadline:
            return text
        time.sleep(0.2)


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--wait":
        sys.stdout.write(wait(sys.argv[2], sys.argv[3]))
        sys.exit(0)
    sys.exit(main(sys.argv[1]))
