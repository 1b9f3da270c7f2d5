"""Replication's host side: what each end holds, read in one listing per side; what a send will cost; why a receive
failed. Pure parsing and argv: the planning (by guid) is the replication app's, the moving of bytes the helpers'.

Texts are OpenZFS 2.3's (lib/libzfs/libzfs_sendrecv.c); several span lines, so patterns match across them.
"""

import ipaddress
import json
import re
from dataclasses import dataclass, field

from hostlib import names, recv_helper, send_helper, serve_helper, systemd, zfs
from hostlib.configfiles import HELPER_DIR, install_sources
from hostlib.errors import HostError, error_for
from hostlib.runner import Transport, python

SNAPSHOT, BOOKMARK = "snapshot", "bookmark"
TOKEN = r"[0-9a-f]+-[0-9a-f]+-[0-9a-f]+-[0-9a-f]+"  # a receive_resume_token: four groups of hex digits
LISTING_FIELDS = ("name", "type", "guid", "createtxg", "receive_resume_token", "creation")


@dataclass(frozen=True)
class Version:
    """A snapshot or bookmark of one dataset: its guid is its identity (names can be reused), createtxg its order."""

    dataset: str
    name: str  # after the @ or #
    kind: str  # snapshot | bookmark
    guid: int
    createtxg: int
    created: int = 0  # unix seconds (the snapshot's creation): how old the newest replicated data is (the lag)

    @property
    def full(self) -> str:
        return f"{self.dataset}{'@' if self.kind == SNAPSHOT else '#'}{self.name}"


@dataclass
class Dataset:
    """One dataset of a side: its versions oldest first, and the token of a receive into it left half done."""

    name: str
    type: str  # filesystem | volume
    guid: int
    resume_token: str = ""
    versions: list[Version] = field(default_factory=list)

    def snapshots(self) -> list[Version]:
        return [v for v in self.versions if v.kind == SNAPSHOT]


def listing_argv(root: str, *, recursive: bool) -> list[str]:
    """Every dataset, snapshot and bookmark at (and, recursive, below) root with guid, createtxg, resume token and
    creation, oldest first: one call per side per run, never one per dataset."""
    depth = ["-r"] if recursive else ["-d", "1"]
    return [
        "zfs",
        "list",
        "-H",
        "-p",
        "-t",
        "filesystem,volume,snapshot,bookmark",
        "-o",
        ",".join(LISTING_FIELDS),
        "-s",
        "createtxg",
        *depth,
        "--",
        names.dataset_name(root),
    ]


def parse_listing(text: str, root: str, *, recursive: bool) -> dict[str, Dataset]:
    """listing_argv's output → datasets by name (root first, then its children in name order), each with its
    snapshots and bookmarks oldest first (createtxg counts a pool's own transactions: it orders within one side)."""
    datasets: dict[str, Dataset] = {}
    versions: list[Version] = []
    for line in text.splitlines():
        if not line:
            continue
        name, kind, guid, createtxg, token, creation = line.split("\t")
        if kind in (SNAPSHOT, BOOKMARK):
            dataset, _, short = name.partition("@" if kind == SNAPSHOT else "#")
            versions.append(Version(dataset, short, kind, int(guid), int(createtxg), int(creation)))
        elif kind in ("filesystem", "volume"):
            if recursive or name == root:
                datasets[name] = Dataset(name, kind, int(guid), "" if token == "-" else token)
    for version in versions:
        if version.dataset in datasets:
            datasets[version.dataset].versions.append(version)
    return dict(sorted(datasets.items(), key=lambda item: (item[0] != root, item[0])))


def listing(t: Transport, root: str, *, recursive: bool) -> dict[str, Dataset]:
    """One side's listing, parsed; {} when root does not exist there (nothing received yet)."""
    argv = listing_argv(root, recursive=recursive)
    done = t.run(argv, check=False, timeout=300)
    if done.returncode:
        if "dataset does not exist" in done.stderr:
            return {}
        raise error_for(argv, done.returncode, done.stderr)
    return parse_listing(done.stdout, root, recursive=recursive)


# --- what a send will cost -------------------------------------------------------------------------------------
@dataclass
class Estimate:
    """`zfs send -nvP`: the bytes of the stream (before ssh), one entry per snapshot it carries; for a resume, the
    token's fields (toname, toguid, fromguid, bytes already received …)."""

    total: int
    steps: list[tuple[str, str, int]]  # (from or "", to, bytes)
    token: dict[str, str] = field(default_factory=dict)


_TOKEN_FIELD = re.compile(r"^\t(\w+) = (.*)$")


def parse_estimate(text: str) -> Estimate:
    """`zfs send -nvP …` (stdout in a dry run): `full\\tto\\tbytes`, `incremental\\tfrom\\tto\\tbytes` lines, then
    `size\\ttotal`; a resume (-t) first prints the token's contents, one `\\tkey = value` line each."""
    total, steps, token = 0, [], {}
    for line in text.splitlines():
        parts = line.split("\t")
        if parts[0] == "full" and len(parts) >= 2:
            steps.append(("", parts[1], int(parts[2]) if len(parts) > 2 and parts[2].isdigit() else 0))
        elif parts[0] == "incremental" and len(parts) >= 3:
            steps.append((parts[1], parts[2], int(parts[3]) if len(parts) > 3 and parts[3].isdigit() else 0))
        elif parts[0] == "size" and len(parts) == 2 and parts[1].isdigit():
            total = int(parts[1])
        elif match := _TOKEN_FIELD.match(line):
            token[match[1]] = match[2]
    return Estimate(total or sum(s[2] for s in steps), steps, token)


def send_argv(
    snapshot: str, *, base: str = "", intermediates: bool = False, token: str = "", dry_run: bool = False
) -> list[str]:
    """The send of one dataset up to snapshot: raw (-w: encrypted data stays encrypted, blocks stay compressed), from
    base with every snapshot between (-I, from a snapshot only) or only the two ends (-i, from a snapshot or a
    bookmark), or the rest of a stream a receive kept (-t)."""
    flags = ["-n", "-v", "-P"] if dry_run else []
    if token:
        if not re.fullmatch(TOKEN, token):
            raise names.InvalidName("A resume token is four groups of hex digits joined by '-'")
        # -w here too: the token's own flags decide otherwise (rawok is recorded for encrypted data only), and a
        # resume is raw whatever a token says (lab-checked: `zfs send -w -t` resumes a raw stream of either kind)
        return ["zfs", "send", *flags, "-w", "-t", token]
    names.snapshot_name(snapshot)
    if base:
        if "#" in base:
            names.dataset_name(base.split("#")[0])
            if intermediates:
                raise names.InvalidName("A send from a bookmark carries no snapshots between (-i, not -I)")
        else:
            names.snapshot_name(base)
        return ["zfs", "send", *flags, "-w", "-I" if intermediates else "-i", base, "--", snapshot]
    return ["zfs", "send", *flags, "-w", "--", snapshot]


def estimate(t: Transport, snapshot: str, *, base: str = "", intermediates: bool = False, token: str = "") -> Estimate:
    """What the send would carry (`zfs send -nvP`, nothing sent)."""
    argv = send_argv(snapshot, base=base, intermediates=intermediates, token=token, dry_run=True)
    return parse_estimate(t.run(argv, timeout=300).stdout)


def estimate_resume(t: Transport, token: str, dataset: str) -> Estimate:
    """What resuming from a token read off the receiving NAS would send, as `estimate` does, once the sending NAS's
    own ZFS says the one stream the token resolves to (by its toguid, whatever its toname says) is of dataset itself:
    a receiving NAS taken over could otherwise write a token that makes the sender send another dataset. HostError
    naming what it resolved to, else."""
    argv = send_argv("", token=token, dry_run=True)
    dry = t.run(argv, timeout=300).stdout
    try:
        snapshot = serve_helper.check_token(names.dataset_name(dataset), dry)
    except serve_helper.Refused as refused:
        raise HostError(f"the target's resume token was refused: {refused}") from None
    if snapshot.partition("@")[0] != dataset:
        raise HostError(
            f"the target's resume token was refused: it resolves to {snapshot}, not a snapshot of {dataset}"
        )
    return parse_estimate(dry)


def pool_txg(t: Transport, pool: str) -> int:
    """The pool's newest transaction group (its txg history kstat, last line): what a dataset made from now on has
    above its createtxg."""
    text = t.run(["cat", "--", f"/proc/spl/kstat/zfs/{names.pool_name(pool)}/txgs"], timeout=30).stdout
    rows = [line.split() for line in text.splitlines() if line[:1].isdigit()]
    if not rows:
        raise HostError(f"{pool} keeps no txg history (zfs_txg_history is 0)")
    return max(int(row[0]) for row in rows)


def made_since(t: Transport, pool: str, txg: int) -> list[tuple[str, str]]:
    """The pool's filesystems and volumes made after txg: [(name, type)], oldest first (one listing of the pool)."""
    argv = ["zfs", "list", "-H", "-p", "-o", "name,type,createtxg", "-t", "filesystem,volume", "-s", "createtxg"]
    text = t.run([*argv, "-r", "--", names.pool_name(pool)], timeout=300).stdout
    rows = [line.split("\t") for line in text.splitlines() if line.count("\t") == 2]
    return [(name, kind) for name, kind, created in rows if created.isdigit() and int(created) > txg]


def destroy_snapshots(t: Transport, dataset: str, snapshots: list[str]) -> None:
    """Destroy snapshots of one dataset in one call (`zfs destroy -- ds@a,b,c`); a held one makes it fail whole."""
    if not snapshots:
        return
    for short in snapshots:
        names.snapshot_name(f"{dataset}@{short}")
    t.run(["zfs", "destroy", "--", f"{names.dataset_name(dataset)}@{','.join(snapshots)}"], mutating=True, timeout=300)


def clones_argv(dataset: str, snapshots: list[str]) -> list[str]:
    return ["zfs", "get", "-H", "-p", "-o", "name,value", "clones", "--"] + [
        names.snapshot_name(f"{dataset}@{short}") for short in snapshots
    ]


def parse_clones(text: str) -> dict[str, list[str]]:
    """clones_argv's output → {snapshot's short name: the datasets cloned from it}, only those that have any."""
    found = {}
    for line in text.splitlines():
        name, _, value = line.partition("\t")
        if value and value != "-":
            found[name.partition("@")[2]] = value.split(",")
    return found


def clones(t: Transport, dataset: str, snapshots: list[str]) -> dict[str, list[str]]:
    """The snapshots of one dataset something was cloned from (a restore beside a replica): ZFS destroys none of a
    batch while one has a clone, so a prune leaves those out."""
    if not snapshots:
        return {}
    return parse_clones(t.run(clones_argv(dataset, snapshots), timeout=120).stdout)


# What every receive sets on a replica (tarn-recv's overrides), and what failing over gives back: setuid, exec and
# devices as the pool's own defaults say (inherited), and canmount=on (not inheritable: set).
REPLICA_OVERRIDES = ("setuid", "exec", "devices")


def make_writable(t: Transport, datasets: dict[str, str]) -> None:
    """Fail over: the replicas (name -> filesystem | volume) writable, their receive-time overrides lifted (canmount
    on, setuid, exec and devices inherited), and the filesystems mounted where they inherit their mountpoint."""
    for dataset, kind in datasets.items():
        name = names.dataset_name(dataset)
        if kind == "filesystem":
            for prop in REPLICA_OVERRIDES:
                t.run(["zfs", "inherit", "--", prop, name], mutating=True, timeout=60)
            t.run(["zfs", "set", "canmount=on", "readonly=off", "--", name], mutating=True, timeout=60)
            done = t.run(["zfs", "mount", "--", name], mutating=True, check=False, timeout=120)
            if done.returncode and "filesystem already mounted" not in done.stderr:
                raise error_for(["zfs", "mount", name], done.returncode, done.stderr)
        else:
            t.run(["zfs", "set", "readonly=off", "--", name], mutating=True, timeout=60)


def receive_abort(t: Transport, dataset: str) -> None:
    """Discard a half-received transfer's saved state (`zfs receive -A`): its token can never be used."""
    argv = ["zfs", "receive", "-A", "--", names.dataset_name(dataset)]
    done = t.run(argv, mutating=True, check=False, timeout=120)
    if done.returncode and "does not have any resumable receive state" not in done.stderr:  # already gone: fine
        raise error_for(argv, done.returncode, done.stderr)


HOLD_BATCH = 200  # snapshots per `zfs hold` (one command per side for a run's datasets, not one per dataset)
_HOLD_FINE = re.compile(r"tag already exists|no such tag|does not exist")


def hold(t: Transport, snapshots: list[str], tag: str, *, release: bool = False) -> None:
    """Hold snapshots with tag (no one can destroy them while held), or release that tag, a batch per command; a tag
    already there (or already gone) is no error. ZFS applies the rest of a batch when one of its snapshots refuses,
    and names each refusal on a line of its own: any other refusal is an error."""
    for at in range(0, len(snapshots), HOLD_BATCH):
        argv = zfs.hold_argv(snapshots[at : at + HOLD_BATCH], tag, release=release)
        done = t.run(argv, mutating=True, check=False, timeout=60)
        # a tag already there, or one (or a snapshot) already gone, is what was wanted
        refused = [line for line in done.stderr.splitlines() if line.strip() and not _HOLD_FINE.search(line)]
        if done.returncode and (refused or not done.stderr.strip()):
            raise error_for(argv, done.returncode, done.stderr)


# --- a run's transfers on the NAS that dials (the sender; for a pull, the receiver) --------------------------------
RUN_DIR = "/run/tarn/replication"


def send_unit(task: int) -> str:
    return f"tarn-repl-{int(task)}"


def progress_path(task: int) -> str:
    return f"{RUN_DIR}/task-{int(task)}.progress.json"


def send_start(t: Transport, task: int, steps: list[dict], ssh: dict, *, limit: int, pull: dict | None = None) -> None:
    """tarn-send as the transient unit tarn-repl-<task> on the NAS that dials (it outlives the worker): steps are
    {"send": argv, "dataset": below the pair's root, "first": bool, "snapshot": for the progress}; pull
    ({"pair", "root"}) when that NAS is the receiving one."""
    for step in steps:
        if step["send"][:2] != ["zfs", "send"]:
            raise ValueError("a step sends with zfs send only")
    spec = f"{RUN_DIR}/task-{int(task)}.json"
    t.run(["install", "-d", "-m", "0700", "--", RUN_DIR], mutating=True)
    fields = {"steps": steps, "ssh": ssh, "limit": int(limit), "progress": progress_path(task)}
    if pull:
        fields["pull"] = {"pair": int(pull["pair"]), "root": names.dataset_name(pull["root"])}
    t.write_file(spec, json.dumps(fields))
    t.remove_file(progress_path(task))
    unit = send_unit(task)
    if systemd.service_state(t, unit)[0] == "failed":
        systemd.reset_failed(t, unit)
    systemd.start(t, unit, python(f"{HELPER_DIR}/tarn-send", spec), description=f"Tarn replication {task}")


def send_progress(t: Transport, task: int, *, wait: float = 0) -> dict:
    """tarn-send's last progress ({} before its first write); with wait, at most that many seconds later, as soon
    as the run ends (tarn-send's own --wait: the end is seen when it comes, in one command)."""
    if wait:
        argv = python(f"{HELPER_DIR}/tarn-send", "--wait", progress_path(task), str(float(wait)))
    else:
        argv = ["cat", "--", progress_path(task)]
    done = t.run(argv, check=False, timeout=30 + wait)
    try:
        return json.loads(done.stdout) if done.returncode == 0 and done.stdout.strip() else {}
    except ValueError:
        return {}


def sender_address(t: Transport, address: str) -> str:
    """The address the dialling NAS leaves from towards address (what the other side's from= must name)."""
    address = str(ipaddress.ip_address(address))  # checked here: ip(8) takes no "--" before it
    routes = json.loads(t.run(["ip", "-j", "route", "get", address], timeout=30).stdout or "[]")
    if not routes or not routes[0].get("prefsrc"):
        raise HostError(f"the host has no route to {address}")
    return routes[0]["prefsrc"]


# --- why a receive (or the send feeding it) failed ----------------------------------------------------------------
@dataclass(frozen=True)
class Cause:
    code: str
    action: str  # resume | abort-and-replan | retry | stop
    says: str  # for the run's log, beside the tool's own words


STALLED = "tarn: stalled, no byte moved; stopped"  # Tarn's own words for a run's log, matched below
VANISHED = "tarn: tarn-send ended without a last word"
CAUSES = [
    (f"{STALLED}|{VANISHED}", Cause("stalled", "resume", "the transfer stopped moving and is resumed")),
    # The token names a snapshot, guid or source the sender no longer has: its half-received state is of no use.
    (
        r"used in the initial send no longer exists|is no longer the same snapshot used in the initial send"
        r"|incremental source 0x[0-9a-f]+ no longer exists|resume token is corrupt"
        # A token that no longer fits the half-received state (libzfs words EINVAL so; openzfs#12480). Tarn reads a
        # token only once no receive runs there (receive_busy), so this one is stale for good.
        r"|incompatible embedded data stream feature with encrypted receive",
        Cause("stale-token", "abort-and-replan", "the interrupted transfer cannot be resumed; it is discarded"),
    ),
    (
        r"contains partially-complete state",
        Cause("partial-state", "resume", "a half-finished transfer is waiting on the target"),
    ),
    (
        r"dataset is busy|a receive into \S+ is still running",
        Cause("busy", "retry", "the target dataset is busy"),
    ),
    (
        r"no connection from \S+ with the nonce|tarn-send: no data connection",
        Cause("interrupted", "resume", "the data connection (tcp) could not be made"),
    ),
    (
        r"does not\s+match incremental source",
        Cause("diverged", "stop", "the target's newest snapshot is not the source's"),
    ),
    (
        r"has been modified\s+since most recent snapshot",
        Cause("modified", "stop", "the target changed since the last common snapshot"),
    ),
    (
        r"destination '[^']*' exists\s+must specify -F|destination has snapshots|destination already exists",
        Cause("exists", "stop", "the target already holds data that is not this replica"),
    ),
    (r"out of space|space quota exceeded", Cause("no-space", "stop", "the target is out of space")),
    (
        r"encryption key does not match|cannot perform raw receive on top of existing unencrypted"
        r"|cannot be used to destroy an encrypted filesystem",
        Cause("encryption", "stop", "the target's encryption does not fit this stream"),
    ),
    (
        r"Host key verification failed|REMOTE HOST IDENTIFICATION HAS CHANGED",
        Cause(
            "host-key",
            "stop",
            "the other NAS's SSH host key is not the one pinned at pairing (pair again if it was replaced on purpose)",
        ),
    ),
    (
        r"Permission denied \(publickey",
        Cause("key-refused", "stop", "the pair's key was refused (its line gone from authorized_keys?): pair again"),
    ),
    (
        r"permission denied|not allowed|forced command|tarn-(recv|serve): refused",
        Cause("refused", "stop", "the other NAS refused the request"),
    ),
    # Last: a receive that ended for a reason of its own (the pool full, the target changed) also breaks the
    # sender's pipe, and that reason is the one to act on.
    (
        r"checksum mismatch or incomplete stream|failed to read from stream|broken pipe|signal received"
        r"|connection (closed|reset|timed out)|client_loop: send disconnect"
        # ssh's own words for a link that went away or is not back yet (its alive probes, its connect timeout, a
        # target booting: its sshd not listening yet)
        r"|Timeout, server \S+ not responding|Connection timed out during banner exchange"
        r"|tarn-send: ssh lost its connection|tarn-send: the data connection failed"
        r"|connect to host \S+ port \d+: (Connection timed out|No route to host|Network is unreachable|Connection refused)",
        Cause("interrupted", "resume", "the transfer was interrupted"),
    ),
]
_CAUSES = [(re.compile(pattern, re.I | re.S), cause) for pattern, cause in CAUSES]
UNKNOWN = Cause("failed", "stop", "the transfer failed")


def cause_of(stderr: str) -> Cause:
    """The first known cause the tools' words name (both ends' stderr, joined), else a plain failure."""
    for pattern, cause in _CAUSES:
        if pattern.search(stderr):
            return cause
    return UNKNOWN


RESUME_HINT = re.compile(rf"zfs send -t\s+({TOKEN})")


BUSY = 75  # flock's exit status when the lock is held (--conflict-exit-code)


def receive_busy(t: Transport, pair: int, target: str) -> bool:
    """Whether a receive into target still runs on this NAS (tarn-recv holds its lock). A transfer cut on the
    sender's side can still be draining here, its resume token already shown and still moving: a token is read,
    and a resume started, only once this is False (a token read early makes the resume fail with 'incompatible
    embedded data stream feature', openzfs#12480)."""
    names.dataset_name(target)
    # as the pair's user, whose folder the locks are in: root never follows a name that user could have planted
    argv = [*as_receiver(pair), "flock", "--nonblock", "--conflict-exit-code", str(BUSY), "--"]
    argv.append(recv_helper.lock_path(pair, target))
    done = t.run([*argv, "true"], check=False)  # a read: the lock file is made if missing, nothing else
    if done.returncode not in (0, BUSY):
        raise error_for(argv, done.returncode, done.stderr)
    return done.returncode == BUSY


# --- pairing: the sender's key, the receiver's forced command -------------------------------------------------------
PAIR_DIR = "/etc/tarn/replication"
AUTHORIZED_KEYS = "/root/.ssh/authorized_keys"  # a pull pair's line (tarn-serve sends as root)
# What ZFS lets a pair's user (recv_helper.user_of) do on the pair's root and below: receive without -F (append), make the datasets a stream
# brings, and set the receive's own overrides (tarn-recv's -o). No other property: a value a stream carries for
# any other (sharenfs, mountpoint, quota…) is refused by ZFS ("cannot receive sharenfs property: permission denied").
ALLOWED = "receive:append,create,mount,readonly,canmount,setuid,exec,devices"
CIPHER = "aes128-gcm@openssh.com"  # AES-NI makes it the fastest of OpenSSH's ciphers on a NAS's CPU


def pair_key(pair: int) -> str:
    """Where the dialling NAS keeps the pair's private key (made there; it never leaves it)."""
    return f"{PAIR_DIR}/pair-{int(pair)}"


def known_hosts(pair: int) -> str:
    """Where the dialling NAS pins the other NAS's host key for the pair's ssh."""
    return f"{PAIR_DIR}/known_hosts-{int(pair)}"


def keygen_argv(pair: int) -> list[str]:
    return ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"tarn-pair-{int(pair)}", "-f", pair_key(pair)]


def authorized_line(pair: int, root: str, sender: str, public_key: str, *, serve: bool = False) -> str:
    """The answering NAS's authorized_keys line, from the dialling NAS's address only: a push pair's key may only
    run tarn-recv into root on the receiver; a pull pair's (serve) only tarn-serve, sending root or below, on the
    sender."""
    names.dataset_name(root)
    sender = str(ipaddress.ip_address(sender))
    kind, blob, *_ = public_key.split()
    if kind != "ssh-ed25519" or not re.fullmatch(r"[A-Za-z0-9+/]+={0,2}", blob):
        raise ValueError("not an ssh-ed25519 public key")
    command = f"/usr/bin/python3 {HELPER_DIR}/{'tarn-serve' if serve else 'tarn-recv'} {int(pair)} {root}"
    return f'restrict,from="{sender}",command="{command}" {kind} {blob} tarn-pair-{int(pair)}'


def with_line(current: str, pair: int, line: str | None) -> str:
    """authorized_keys with the pair's line put in (or, None, taken out); every other line kept as it was."""
    mark = f" tarn-pair-{int(pair)}"
    kept = [row for row in current.splitlines() if not row.endswith(mark)]
    rows = kept + ([line] if line else [])
    return "\n".join(rows) + "\n" if rows else ""


def recv_keys(pair: int) -> str:
    """A push pair's authorized_keys: its user's (sshd runs tarn-recv as that user), root's file."""
    return f"{recv_helper.home_of(pair)}/.ssh/authorized_keys"


def as_receiver(pair: int) -> list[str]:
    """argv prefix: run as the pair's user."""
    user = recv_helper.user_of(pair)
    return ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups", "--"]


def receiver_prepare(t: Transport, pair: int, root: str) -> None:
    """The receiving NAS's side of a pair: the pair's own user (a system user with no password; its home and .ssh
    root's, so it cannot change its own keys), its locks folder (its own, 0700), and ZFS's leave to receive into
    root and below only (ALLOWED). Repeatable."""
    root, user, home = names.dataset_name(root), recv_helper.user_of(pair), recv_helper.home_of(pair)
    if t.run(["id", "-u", "--", user], check=False).returncode:
        useradd = ["useradd", "--system", "--home-dir", home, "--no-create-home", "--shell", "/bin/sh", "--", user]
        t.run(useradd, mutating=True)
    t.run(["install", "-d", "-m", "0755", "--", recv_helper.HOMES, home, f"{home}/.ssh"], mutating=True)
    t.run(["install", "-d", "-o", user, "-g", user, "-m", "0700", "--", f"{home}/locks"], mutating=True)
    t.run(["zfs", "allow", "-u", "--", user, ALLOWED, root], mutating=True, timeout=60)


def receiver_release(t: Transport, pair: int, root: str) -> None:
    """The pair's user gone from the receiving NAS: ZFS's leave on root taken back, the user removed."""
    user = recv_helper.user_of(pair)
    if t.run(["id", "-u", "--", user], check=False).returncode:
        return
    argv = ["zfs", "unallow", "-u", "--", user, ALLOWED, names.dataset_name(root)]
    done = t.run(argv, mutating=True, check=False, timeout=60)
    if done.returncode and "dataset does not exist" not in done.stderr:
        raise error_for(argv, done.returncode, done.stderr)
    t.run(["userdel", "--", user], mutating=True)
    t.remove_file(recv_keys(pair))


def set_quota(t: Transport, root: str, quota: int) -> None:
    """The most a pair's root (its replicas with their snapshots) may hold on the receiving NAS."""
    t.run(["zfs", "set", f"quota={int(quota)}", "--", names.dataset_name(root)], mutating=True, timeout=60)


def install_helpers(t: Transport) -> bool:
    """tarn-send, tarn-recv and tarn-serve on a NAS, root's, from this Tarn's own source (rewritten only when they
    differ); True when they were."""
    names = (("tarn-send", send_helper), ("tarn-recv", recv_helper), ("tarn-serve", serve_helper))
    return install_sources(t, {f"{HELPER_DIR}/{name}": m for name, m in names})


def pair_make_key(t: Transport, pair: int) -> str:
    """A new key for the pair on the NAS that dials (any old one replaced); its public half."""
    t.run(["install", "-d", "-m", "0700", "--", PAIR_DIR], mutating=True)
    for path in (pair_key(pair), f"{pair_key(pair)}.pub"):
        t.remove_file(path)
    t.run(keygen_argv(pair), mutating=True)
    return t.read_file(f"{pair_key(pair)}.pub").strip()


def host_keys(t: Transport) -> list[str]:
    """The NAS's own SSH host key ("ssh-ed25519 <base64>"), read through Tarn's pinned connection to it: what the
    dialling NAS pins for the pair."""
    kind, blob, *_ = t.read_file("/etc/ssh/ssh_host_ed25519_key.pub").split()
    if kind != "ssh-ed25519" or not re.fullmatch(r"[A-Za-z0-9+/]+={0,2}", blob):
        raise HostError("the host has no ed25519 SSH host key")
    return [f"{kind} {blob}"]


def pair_unmake_key(t: Transport, pair: int) -> None:
    """The pair's key and pinned host key gone from the dialling NAS."""
    for path in (pair_key(pair), f"{pair_key(pair)}.pub", known_hosts(pair)):
        t.remove_file(path)


def pair_pin(t: Transport, pair: int, address: str, port: int, host_keys: list[str]) -> str:
    """The answering NAS's host keys, pinned on the dialling NAS for the pair's ssh; the file's path."""
    base = address if int(port) == 22 else f"[{address}]:{int(port)}"
    path = known_hosts(pair)
    t.write_file(path, "".join(f"{base} {key}\n" for key in host_keys), mode=0o600)
    return path


def pair_check(t: Transport, pair: int, address: str, port: int, *, helper: str = "tarn-recv", user: str = "") -> str:
    """From the NAS that dials, the pair's key to the other as a transfer will use it (pinned host key, batch mode):
    the forced command's hello ("tarn-recv <pair> <root>", or tarn-serve's for a pull), or a HostError with ssh's
    words (key refused, host key changed, no route)."""
    argv = send_helper.ssh_argv(
        {
            "identity": pair_key(pair),
            "known_hosts": known_hosts(pair),
            "cipher": CIPHER,
            "port": int(port),
            "address": str(ipaddress.ip_address(address)),
            "user": user or (recv_helper.user_of(pair) if helper == "tarn-recv" else "root"),
        },
        {"verb": "hello"},
    )
    done = t.run(argv, check=False, timeout=60)
    if done.returncode or not done.stdout.startswith(f"{helper} {int(pair)} "):
        raise error_for(argv, done.returncode or 1, done.stderr or done.stdout)
    return done.stdout.strip()


def authorize(t: Transport, pair: int, line: str | None, *, keys: str = AUTHORIZED_KEYS) -> bool:
    """Put the pair's line into the answering NAS's authorized_keys file keys (root's, or recv_keys(pair) for a
    push pair; None: take it out); True if it changed. A pair's user's file is root's, readable by that user (sshd
    reads it as the user)."""
    read = t.run(["cat", "--", keys], check=False)
    if read.returncode and "No such file" not in read.stderr:  # never rewrite a file it could not read whole
        raise error_for(["cat", keys], read.returncode, read.stderr)
    text = with_line(read.stdout if read.returncode == 0 else "", pair, line)
    return t.write_file(keys, text, mode=0o600 if keys == AUTHORIZED_KEYS else 0o644)
