"""tarn-recv: the only thing a replication key may do on the receiving NAS, and only as the pair's own unprivileged
user tarn-recv-<pair>, which ZFS allows to receive into the pair's root and nowhere else.

Installed root-owned at RECV_PATH and named, as its forced command, in the authorized_keys of the pair's user
(a push pair: sshd runs it as that user):

    restrict,from="<sender's address>",command="/usr/bin/python3 <RECV_PATH> <pair> <target root>" ssh-ed25519 …

or started by tarn-send as root on a NAS that pulls; started as root, it becomes the pair's user before it reads a
byte of the stream. Whatever command the sender's ssh asks for, sshd runs this instead and hands the request over in
SSH_ORIGINAL_COMMAND. That text is read as data (one JSON object), never run: the receive argv is built here, into
the configured root only, without -F (nothing on the target is ever rolled back or destroyed by a key).

What a paired NAS may decide is the data, nothing else (it may have been taken over):
- ZFS itself holds the line: the receive runs as the pair's user, which `zfs allow` lets receive (append only,
  never -F), create and set the receive's own overrides on the pair's root and below (hostlib.replication.ALLOWED);
  a stream that tries to land elsewhere (another pair's root included), or to set a property it carries (sharenfs,
  mountpoint, quota…), is refused by ZFS.
- The stream's head is read here before zfs receive sees a byte (stream_head): a package (what zfs send -R, -p,
  -h or -b adds: properties, holds, children) or a clone is refused, and so is a full stream into a dataset that
  exists (unless it resumes one cut short there) or an incremental into one that does not: whether a receive is
  the first is the target's to say, not the sender's.
- Every receive makes the replica read-only, never mounted by itself (canmount=noauto), without setuid, exec or
  devices (FILESYSTEM_OPTIONS), and excludes the quota and reservations a stream could carry. (Not -x mountpoint,
  sharenfs or sharesmb: -x asks ZFS to inherit each explicitly, which needs the very permission the user lacks;
  ZFS refuses a value the stream carries for them all the same.)

Requests: {"verb": "hello"} (Tarn's check of a new pair: answers "tarn-recv <pair> <root>"),
          {"verb": "receive", "dataset": "<path below the root>", "idle": seconds, "tcp": true|false}
          (idle: when no byte has come for that long (a cut link sshd would not notice for hours), the stream is
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
import pwd
import re
import secrets
import select
import socket
import struct
import subprocess
import sys
import time

RECV_PATH = "/usr/local/lib/tarn/tarn-recv"
HOMES = "/var/lib/tarn-recv"  # each pair's user's home below it: root's, but for its locks folder
_COMPONENT = re.compile(r"[A-Za-z0-9_.:-]{1,255}")
_PAIR = re.compile(r"[0-9]{1,12}")
MAX_REQUEST = 4096
IDLE = 60
CHUNK = 1 << 20
ENV = {"LC_ALL": "C", "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}

# Every receive's overrides: the replica is data to keep, not a filesystem to run or share. For a volume only
# readonly (the others do not apply to one, and zfs receive refuses an override that does not apply).
FILESYSTEM_OPTIONS = ["readonly=on", "canmount=noauto", "setuid=off", "exec=off", "devices=off"]
VOLUME_OPTIONS = ["readonly=on"]
EXCLUDED = ["quota", "refquota", "reservation", "refreservation"]


def user_of(pair):
    """The user a pair's receives run as."""
    return f"tarn-recv-{int(pair)}"


def home_of(pair):
    return f"{HOMES}/pair-{int(pair)}"


class Refused(Exception):
    pass


def _dataset(root, relative):
    """root/relative when every part of relative is a plain ZFS name component."""
    parts = relative.split("/")
    for part in parts:
        if not _COMPONENT.fullmatch(part) or part.startswith("-") or part in (".", ".."):
            raise Refused(f"not a dataset path below the target: {relative!r}")
    name = f"{root}/{relative}"
    if len(name) > 255:
        raise Refused("the dataset name is longer than ZFS allows")
    return name


FIELDS = {"verb", "dataset", "idle", "tcp"}


def receive_target(root, request):
    """(the dataset a request receives into, its idle limit, tcp), or Refused with the reason."""
    if not isinstance(request, dict) or request.get("verb") != "receive":
        raise Refused("this key may only receive")
    if set(request) - FIELDS:
        raise Refused(f"unknown fields: {sorted(set(request) - FIELDS)}")
    if type(request.get("tcp", False)) is not bool:
        raise Refused("tcp is true or false")
    relative = request.get("dataset")
    if not isinstance(relative, str) or not relative:
        raise Refused("dataset is a path below the target's root")
    idle = request.get("idle", IDLE)
    if type(idle) is not int or not 2 <= idle <= 3600:
        raise Refused("idle is whole seconds from 2 to 3600")
    return _dataset(root, relative), idle, request.get("tcp", False)


def receive_argv(target, volume):
    """The receive: resumable (-s), never mounted by it (-u), never forced (no -F), the replica's overrides and
    exclusions (see the module's words)."""
    argv = ["zfs", "receive", "-s", "-u"]
    for option in VOLUME_OPTIONS if volume else FILESYSTEM_OPTIONS:
        argv += ["-o", option]
    for name in EXCLUDED:
        argv += ["-x", name]
    return [*argv, "--", target]


# --- the stream's head (include/sys/zfs_ioctl.h: dmu_replay_record_t, 312 bytes) --------------------------------
RECORD = 312
BEGIN = struct.Struct("<IIQQQIIQQ256s")  # type, payloadlen, then drr_begin: magic, versioninfo, creation, objset
DRR_BEGIN, DRR_END = 0, 5  # type, flags, toguid, fromguid, toname
MAGIC = 0x2F5BACBAC
SUBSTREAM, COMPOUND = 1, 2  # DMU_GET_STREAM_HDRTYPE(versioninfo): its low two bits
FLAG_CLONE = 1  # DRR_FLAG_CLONE
OBJSET_FILESYSTEM, OBJSET_VOLUME = 2, 3  # DMU_OST_ZFS, DMU_OST_ZVOL
MAX_PAYLOAD = 1 << 20  # a substream's BEGIN payload (raw keys, resume fields) is a few KiB


class Head:
    """What a stream's head says: its first substream's BEGIN record."""

    def __init__(self, record):
        kind, self.payload, magic, versioninfo, _, self.objset, self.flags, self.toguid, self.fromguid, name = (
            BEGIN.unpack(record)
        )
        if kind != DRR_BEGIN or magic != MAGIC:
            raise Refused("not a ZFS send stream (or one of another byte order)")
        self.header = versioninfo & 3
        self.toname = name.split(b"\0")[0].decode(errors="replace")

    @property
    def volume(self):
        return self.objset == OBJSET_VOLUME


def stream_head(read):
    """The stream's head, read with read(n) (exactly n bytes, or Refused): (the bytes read, to hand on to zfs
    receive first, and the Head of its first substream). A compound stream (zfs send -I) is taken only without a
    package: its BEGIN has no payload, then its END, then the first substream. Refused: a package (zfs send -R, -p,
    -h, -b: properties, holds, children), a clone, anything but a filesystem or a volume."""
    data = read(RECORD)
    head = Head(data)
    if head.header == COMPOUND:
        if head.payload:
            raise Refused(
                "the stream carries properties, holds or children (zfs send -R, -p, -h or -b); "
                "Tarn's sends never do, and this target takes none"
            )
        end = read(RECORD)
        if struct.unpack_from("<I", end)[0] != DRR_END:
            raise Refused("a compound stream's header is not followed by its END record")
        first = read(RECORD)
        data += end + first
        head = Head(first)
        if head.header != SUBSTREAM:
            raise Refused("a compound stream within a compound stream")
    elif head.header != SUBSTREAM:
        raise Refused("not a ZFS send stream: unknown header type")
    if head.payload > MAX_PAYLOAD:
        raise Refused("the stream's first record says it carries more than a send's header can")
    data += read(head.payload)
    if head.flags & FLAG_CLONE:
        raise Refused("the stream makes a clone (of a snapshot the sender names by guid): not taken")
    if head.objset not in (OBJSET_FILESYSTEM, OBJSET_VOLUME):
        raise Refused("the stream is neither a filesystem nor a volume")
    return data, head


def check_fits(head, present):
    """Whether the stream may go into the target as it is now (present: None when it does not exist, else its
    resume token or "-"): a full stream only into a dataset that does not exist (or to resume one cut short there),
    an incremental only into one that does."""
    if present is None and head.fromguid:
        raise Refused("an incremental stream into a dataset the target does not have")
    if present is not None and not head.fromguid and present == "-":
        raise Refused("a full stream into a dataset that exists: only an incremental continues a replica")


def present_state(target):
    """None when target does not exist, else its receive_resume_token ("-" when none): one `zfs list`."""
    done = subprocess.run(
        ["zfs", "list", "-H", "-p", "-o", "receive_resume_token", "--", target],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=120,
    )
    if done.returncode:
        if "does not exist" in done.stderr:
            return None
        raise Refused(f"the target could not be read: {done.stderr.strip()[-300:]}")
    return done.stdout.strip() or "-"


def reader(source, idle):
    """read(n): exactly n bytes from source, waiting at most idle seconds for each piece; Refused if it ends or goes
    silent first."""

    def read(n):
        data = b""
        while len(data) < n:
            ready, _, _ = select.select([source], [], [], idle)
            piece = os.read(source, n - len(data)) if ready else b""
            if not piece:
                raise Refused("the stream ended (or went silent) before its head was read")
            data += piece
        return data

    return read


def unprivileged(pair):
    """Become the pair's user (started as root by tarn-send on a NAS that pulls); run by sshd, be that user."""
    user = user_of(pair)
    if os.geteuid() != 0:
        if pwd.getpwuid(os.geteuid()).pw_name != user:
            raise Refused(f"runs as root or {user} only")
        return
    try:
        entry = pwd.getpwnam(user)
    except KeyError:
        raise Refused(f"there is no user {user} on this NAS: pair again") from None
    os.setgroups([])
    os.setgid(entry.pw_gid)
    os.setuid(entry.pw_uid)
    if os.geteuid() == 0 or os.getuid() == 0:
        raise Refused("could not leave root")


def pump(command, idle, source=0, head=b""):
    """The stream on source (stdin, or a TCP connection's fd) into `zfs receive`, its head (already read) first,
    the rest with os.splice (the bytes never pass through Python) until it ends, or until nothing has come for idle
    seconds; then zfs receive sees the end and keeps a partial stream's state."""
    child = subprocess.Popen(command, stdin=subprocess.PIPE, env={**os.environ, **ENV})
    gather, last = wide(source, child.stdin.fileno()), time.monotonic()
    try:
        if head:
            child.stdin.write(head)
            child.stdin.flush()
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


def lock_path(pair, target):
    """The file a receive into target holds locked for as long as it runs (Tarn checks it before reading a token):
    in the pair's user's own locks folder, never a folder others may write to."""
    return f"{home_of(pair)}/locks/{hashlib.sha256(target.encode()).hexdigest()[:24]}.lock"


def one_at_a_time(pair, target, wait):
    """Hold the target's lock for as long as this process lives. A receive cut on the sender's side can still be
    running here (its resume token already shows); a resume waits for it to end (its idle limit) instead of racing
    it, and after `wait` seconds is refused."""
    # read-only is enough for flock, and opens a lock file Tarn's check made first (root's, 0644)
    fd = os.open(lock_path(pair, target), os.O_RDONLY | os.O_CREAT | os.O_NOFOLLOW, 0o600)
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
    """The forced command's line and request, checked: (None, 0, False) for a hello, else (the dataset to receive
    into, the idle limit, tcp)."""
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
    return receive_target(root, request)


def receive(pair, target, idle, tcp, ssh_connection=""):
    """One receive into target, as the pair's user: one at a time per dataset; the stream's head read and checked
    against what the target holds before zfs receive sees it; zfs receive's exit status."""
    unprivileged(pair)
    lock = one_at_a_time(pair, target, wait=idle + 30)  # held until this process ends
    source = listen(ssh_connection) if tcp else 0
    data, head = stream_head(reader(source, idle))
    check_fits(head, present_state(target))
    status = pump(receive_argv(target, head.volume), idle, source, head=data)
    os.close(lock)
    return status


if __name__ == "__main__":
    try:
        target, idle, tcp = main(sys.argv, os.environ)
    except Refused as refused:
        print(f"tarn-recv: refused: {refused}", file=sys.stderr)
        sys.exit(3)
    if target is None:
        print(f"tarn-recv {sys.argv[1]} {sys.argv[2]}")
        sys.exit(0)
    try:
        sys.exit(receive(sys.argv[1], target, idle, tcp, os.environ.get("SSH_CONNECTION", "")))
    except (Refused, OSError, ValueError) as refused:
        print(f"tarn-recv: refused: {refused}", file=sys.stderr)
        sys.exit(4)
