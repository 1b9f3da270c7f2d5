"""Tarn's snapshot reader, run on the host as root: lists a folder of a snapshot (and the same folder of the live
dataset beside it) and tells a file's versions across snapshots, through the dataset's .zfs/snapshot/<name>, never
through a link: every component from / is opened relative to its parent with O_NOFOLLOW, and entries are read with
lstat (a link is shown with its target, never followed).

A snapshot is mounted by the kernel the first time it is opened (ZFS's automount). The reader counts as its own the
mounts it caused and unmounts them when done (UMOUNT_NOFOLLOW; one another process is inside stays, ZFS expires it);
at most SLOTS readers run at once on a host (a lock each), and a versions pass mounts one snapshot at a time, so at
most SLOTS snapshots are mounted by Tarn's reads at any moment.

    list     REQUEST   {mount, snapshot or null, parts, offset, limit, live}: one page of a folder: JSON
    versions REQUEST   {mount, snapshots (newest first), parts}: the path's lstat in each: JSON
    entry    REQUEST   {mount, snapshot, parts}: one entry, and how the live one compares: JSON
    read     REQUEST   {mount, snapshot, parts, offset, length}: a regular file's bytes (base64, 8 MiB at most) and
                       its size: JSON
    diff     REQUEST   {argv: zfs diff's, mount, prefix, offset, limit}: its lines under prefix, counted, one page
    mounts   MOUNT     the snapshots of that dataset mounted now: JSON
    serve [IDLE]       kept for several questions (Tarn's pages): a question a line on stdin, {"command": list,
                       entry, versions or read, "request": REQUEST}, answered by a line on stdout, {"answer": …},
                       {"refused": why} or {"error": why}; ends at the end of its input or after IDLE seconds (60)
                       without a question. Each question takes its slot and unmounts what it mounted, as a run does

REQUEST is JSON on stdin. Names travel as hex of their bytes (any byte but / and NUL is a name on Linux); each
entry also carries its name as text, with anything not printable UTF-8 escaped. Standard library only (its source
is sent to the host's python3). Exit 3: refused (a link on the way, not a folder, no such snapshot)."""

import errno
import fcntl
import grp
import itertools
import operator
import os
import pwd
import stat
import sys
import time

from hostlib.wire import dumps, loads

REFUSED = 3
SLOTS = 4  # readers at once on a host, so snapshots mounted by Tarn's reads at once
BATCH = 10_000  # entries of a folder read before the page so far is kept and the rest let go
SLOT_WAIT = 20.0  # seconds a reader waits for a slot before it refuses ("busy")
LOCK_DIR = "/run/tarn-snap"
OPEN_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
UMOUNT_NOFOLLOW = 8
TYPES = {stat.S_IFDIR: "dir", stat.S_IFREG: "file", stat.S_IFLNK: "link", stat.S_IFCHR: "char", stat.S_IFBLK: "block",
         stat.S_IFIFO: "fifo", stat.S_IFSOCK: "socket"}  # fmt: skip


class Refused(Exception):
    pass


def shown(raw: bytes) -> str:
    """A name as text: UTF-8 where it is, every other byte and every control character escaped (\\n, \\x1b, \\xff)."""
    text = raw.decode("utf-8", "backslashreplace")
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)


def _names(parts):
    names = [bytes.fromhex(p) for p in parts]
    if any(n in (b"", b".", b"..") or b"/" in n or b"\0" in n for n in names):
        raise Refused("refusing the path: only plain names, no '..'")
    return names


def _open_below(fd, names, what):
    """A descriptor of fd/names…, each opened with O_NOFOLLOW relative to the one before; fd is closed."""
    try:
        for name in names:
            try:
                child = os.open(name, OPEN_DIR, dir_fd=fd)
            except OSError as e:
                if e.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise Refused(f"refusing {what}: {shown(name)} is a link or not a folder") from None
                if e.errno == errno.ENOENT:
                    raise Refused(f"refusing {what}: {shown(name)} does not exist there") from None
                raise
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_mount(mount):
    """The dataset's mount point, every component from / opened without following a link."""
    names = [p.encode() for p in mount.split("/") if p]
    if not mount.startswith("/") or any(n in (b".", b"..") for n in names):
        raise Refused(f"refusing {mount}: not an absolute path")
    return _open_below(os.open("/", OPEN_DIR), names, mount)


def mounted(mount):
    """The snapshots of the dataset mounted at mount that are mounted now (from /proc/self/mountinfo)."""
    prefix = mount.rstrip("/") + "/.zfs/snapshot/"
    found = set()
    with open("/proc/self/mountinfo", "rb") as fh:
        for line in fh:
            point = line.split(b" ")[4].decode("utf-8", "surrogateescape")
            point = point.replace("\\040", " ").replace("\\011", "\t").replace("\\012", "\n").replace("\\134", "\\")
            if point.startswith(prefix) and "/" not in point[len(prefix) :]:
                found.add(point[len(prefix) :])
    return found


def _unmount(path):
    import ctypes  # noqa: PLC0415 - imports are most of a run under emulation (subprocess ~0.2 s): only where needed

    libc = ctypes.CDLL(None, use_errno=True)
    libc.umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]
    if libc.umount2(os.fsencode(path), UMOUNT_NOFOLLOW) != 0:
        return errno.errorcode.get(ctypes.get_errno(), "error")
    return ""


class Snapshot:
    """A snapshot's root, opened (and so mounted if it was not); on leaving, unmounted if this reader mounted it."""

    def __init__(self, mount, name, fd_mount):
        if not name or "/" in name or name in (".", ".."):
            raise Refused(f"refusing the snapshot name {name!r}")
        self.mount, self.name, self.fd_mount = mount, name, fd_mount
        self.fd, self.mounted_here = None, False

    def __enter__(self):
        before = self.name in mounted(self.mount)
        fd = _open_below(os.dup(self.fd_mount), [b".zfs", b"snapshot"], f"{self.mount}/.zfs/snapshot")
        self.fd = _open_below(fd, [self.name.encode()], f"snapshot {self.name}")
        self.mounted_here = not before and self.name in mounted(self.mount)
        return self.fd

    def __exit__(self, *exc):
        if self.fd is not None:
            os.close(self.fd)
        if self.mounted_here:
            _unmount(f"{self.mount.rstrip('/')}/.zfs/snapshot/{self.name}")  # busy: another is inside; ZFS expires it


def _slot():
    """One of SLOTS locks (a reader holds it until it exits), or Refused after SLOT_WAIT."""
    os.makedirs(LOCK_DIR, mode=0o700, exist_ok=True)
    deadline = time.monotonic() + SLOT_WAIT
    while True:
        for i in range(SLOTS):
            fd = os.open(f"{LOCK_DIR}/slot-{i}", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return fd
            except BlockingIOError:
                os.close(fd)
        if time.monotonic() > deadline:
            raise Refused(f"busy: {SLOTS} snapshot reads are running on this host; try again")
        time.sleep(0.05)


def _owner(uid, names):
    if uid not in names:
        try:
            names[uid] = pwd.getpwuid(uid).pw_name
        except (KeyError, OverflowError):
            names[uid] = str(uid)
    return names[uid]


def _group(gid, names):
    if gid not in names:
        try:
            names[gid] = grp.getgrgid(gid).gr_name
        except (KeyError, OverflowError):
            names[gid] = str(gid)
    return names[gid]


def _entry(fd, raw, users, groups, st=None):
    st = st or os.lstat(raw, dir_fd=fd)
    kind = TYPES.get(stat.S_IFMT(st.st_mode), "other")
    found = {
        "name": shown(raw), "raw": raw.hex(), "type": kind, "size": st.st_size, "mode": stat.S_IMODE(st.st_mode),
        "uid": st.st_uid, "gid": st.st_gid, "owner": _owner(st.st_uid, users), "group": _group(st.st_gid, groups),
        "mtime": st.st_mtime, "ino": st.st_ino,
    }  # fmt: skip
    if kind == "link":
        found["target"] = shown(os.readlink(raw, dir_fd=fd))
    return found


def _stamp(fd, raw):
    """What tells two versions of an entry apart: its object number, size, type and times (None: not there)."""
    try:
        return _stamp_of(os.lstat(raw, dir_fd=fd))
    except FileNotFoundError:
        return None


def _stamp_of(st):
    return [st.st_ino, st.st_size, stat.S_IFMT(st.st_mode), st.st_mtime_ns, st.st_ctime_ns]


def _page(fd, offset, limit):
    """Folders first, then by name (as text: code point order, a byte that is not UTF-8 as U+DC80-DCFF): one page of
    entries (names as bytes), and how many there are in all. The folder is read BATCH entries at a time, keeping only
    the first offset + limit folders and files (a folder of millions costs a page's memory, not millions'), each step
    in C (map, compress, sorted: a Python loop over 10,000 entries was 90 ms of a page's 120 under emulation). A
    folder with no folder inside (two links: ZFS counts a folder's subfolders in its links, as find's leaf
    optimisation reads them) is not asked the type of each entry."""
    keep = offset + limit
    leaf = os.fstat(fd).st_nlink == 2
    is_dir = operator.methodcaller("is_dir", follow_symlinks=False)
    name = operator.attrgetter("name")
    folders, files, total = [], [], 0
    with os.scandir(fd) as found:
        while batch := list(itertools.islice(found, max(BATCH, keep))):
            total += len(batch)
            names = list(map(name, batch))
            if leaf:
                files = sorted(itertools.chain(files, names))[:keep]
                continue
            flags = list(map(is_dir, batch))
            folders = sorted(itertools.chain(folders, itertools.compress(names, flags)))[:keep]
            files = sorted(itertools.chain(files, itertools.compress(names, map(operator.not_, flags))))[:keep]
    return list(map(os.fsencode, (folders + files)[offset:keep])), total


def listing(request):
    mount, snapshot = request["mount"], request.get("snapshot")
    names = _names(request.get("parts", []))
    offset, limit = max(0, int(request.get("offset", 0))), min(max(1, int(request.get("limit", 200))), 1000)
    slot = _slot()
    try:
        fd_mount = open_mount(mount)
        try:
            if snapshot is None:
                return {**_folder(fd_mount, None, names, offset, limit), "mounted_here": False}
            snap = Snapshot(mount, snapshot, fd_mount)
            with snap as root:  # the folder's descriptors are closed inside: the unmount on leaving is not busy
                found = _folder(root, fd_mount if request.get("live", True) else None, names, offset, limit)
            return {**found, "mounted_here": snap.mounted_here}
        finally:
            os.close(fd_mount)
    finally:
        os.close(slot)


def _folder(top, fd_live, names, offset, limit):
    """One page of the folder top/names…; with fd_live (the live dataset's mount), each entry says whether the live
    folder has it the same, changed, or not at all."""
    users, groups = {}, {}
    fd = _open_below(os.dup(top), names, "the folder")
    try:
        page, total = _page(fd, offset, limit)
        seen = {}
        for raw in page:
            try:
                seen[raw] = os.lstat(raw, dir_fd=fd)
            except FileNotFoundError:  # gone between the listing and its stat (a live folder changes)
                pass
        entries = [_entry(fd, raw, users, groups, st) for raw, st in seen.items()]
        if fd_live is not None:
            live = _live(fd_live, names, page)
            for entry, st in zip(entries, seen.values(), strict=True):
                theirs = live.get(entry["raw"])
                entry["live"] = "gone" if theirs is None else ("same" if theirs == _stamp_of(st) else "changed")
    finally:
        os.close(fd)
    return {"entries": entries, "total": total, "offset": offset}


def _live(fd_mount, names, page):
    """The same names in the live dataset's folder: {raw hex: stamp}; {} where the folder is gone or is a link."""
    try:
        fd = _open_below(os.dup(fd_mount), names, "the live folder")
    except Refused:
        return {}
    try:
        return {raw.hex(): stamp for raw in page if (stamp := _stamp(fd, raw)) is not None}
    finally:
        os.close(fd)


def versions(request):
    """The path's stamp live and in each snapshot given (newest first), one snapshot mounted at a time; a snapshot
    gone meanwhile is marked missing. most_mounted: the most of the dataset's snapshots mounted at once during the
    pass beyond those mounted before it (1 at most from this reader)."""
    mount = request["mount"]
    names = _names(request["parts"])
    if not names:
        raise Refused("refusing the path: name a file or folder")
    folder, last = names[:-1], names[-1]
    found, most = [], 0
    slot = _slot()
    try:
        fd_mount = open_mount(mount)
        try:
            live = _stamp_in(fd_mount, folder, last)
            before = mounted(mount)
            for name in request["snapshots"]:
                snap = Snapshot(mount, name, fd_mount)
                try:
                    with snap as root:
                        stamp = _stamp_in(root, folder, last)
                        most = max(most, len(mounted(mount) - before))
                except Refused:
                    found.append({"snapshot": name, "stamp": None, "missing": True})
                    continue
                found.append({"snapshot": name, "stamp": stamp})
        finally:
            os.close(fd_mount)
    finally:
        os.close(slot)
    return {"live": live, "snapshots": found, "most_mounted": most}


def _stamp_in(top, folder, last):
    try:
        fd = _open_below(os.dup(top), folder, "the folder")
    except Refused:  # a folder on the way is not there (or is a link) in this one
        return None
    try:
        return _stamp(fd, last)
    finally:
        os.close(fd)


def entry(request):
    """One entry of a snapshot (lstat, never followed) and how the live one compares: same, changed or gone."""
    mount, names = request["mount"], _names(request["parts"])
    if not names:
        raise Refused("refusing the path: name a file or folder")
    folder, last = names[:-1], names[-1]
    slot = _slot()
    try:
        fd_mount = open_mount(mount)
        try:
            with Snapshot(mount, request["snapshot"], fd_mount) as root:
                fd = _open_below(os.dup(root), folder, "the folder")
                try:
                    try:
                        found = _entry(fd, last, {}, {})
                    except FileNotFoundError:
                        raise Refused(f"refusing the path: {shown(last)} is not in the snapshot") from None
                    mine = _stamp(fd, last)
                finally:
                    os.close(fd)
            theirs = _stamp_in(fd_mount, folder, last)
        finally:
            os.close(fd_mount)
    finally:
        os.close(slot)
    found["live"] = "gone" if theirs is None else ("same" if theirs == mine else "changed")
    return found


def read(request):
    """length bytes of a regular file of a snapshot from offset, base64, and the file's size (its parts read one
    request at a time: a snapshot's file does not change between two)."""
    import base64  # noqa: PLC0415 - only this command needs it

    mount, names = request["mount"], _names(request["parts"])
    if not names:
        raise Refused("refusing the path: name a file")
    offset, length = max(0, int(request.get("offset", 0))), min(max(0, int(request.get("length", 0))), 8 << 20)
    slot = _slot()
    try:
        fd_mount = open_mount(mount)
        try:
            with Snapshot(mount, request["snapshot"], fd_mount) as root:
                fd = _open_below(os.dup(root), names[:-1], "the folder")
                try:
                    try:  # a snapshot does not change: what lstat says is what open finds (a device is never opened)
                        seen = os.lstat(names[-1], dir_fd=fd)
                    except FileNotFoundError:
                        raise Refused(f"refusing {shown(names[-1])}: a link or not there") from None
                    if stat.S_ISLNK(seen.st_mode):
                        raise Refused(f"refusing {shown(names[-1])}: a link or not there")
                    if not stat.S_ISREG(seen.st_mode):
                        raise Refused(f"refusing {shown(names[-1])}: not a regular file")
                    f = os.open(names[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=fd)
                    try:
                        st = os.fstat(f)
                        if (st.st_dev, st.st_ino) != (seen.st_dev, seen.st_ino) or not stat.S_ISREG(st.st_mode):
                            raise Refused(f"refusing {shown(names[-1])}: it changed while it was opened")
                        data = os.pread(f, length, offset) if length else b""
                    finally:
                        os.close(f)
                finally:
                    os.close(fd)
        finally:
            os.close(fd_mount)
    finally:
        os.close(slot)
    return {"size": st.st_size, "data": base64.b64encode(data).decode("ascii")}


def _unescape(raw):
    import re  # noqa: PLC0415 - only diffs need it

    return re.sub(rb"\\([0-7]{4})", lambda m: bytes([int(m.group(1), 8) & 0xFF]), raw)


def diff(request):
    """`zfs diff -FHt SINCE TO` read as it comes (never whole in memory): the lines under prefix (below the mount
    point, its bytes as hex; a rename counts where either side is), counted by change, and one page of them."""
    import subprocess  # noqa: PLC0415 - only diffs start a process
    import tempfile  # noqa: PLC0415

    argv = request["argv"]
    if argv[:2] != ["zfs", "diff"]:
        raise Refused("refusing: not a zfs diff")
    base = os.fsencode(request["mount"].rstrip("/")) + b"/"
    prefix = base + bytes.fromhex(request.get("prefix", ""))
    offset, limit = max(0, int(request.get("offset", 0))), min(max(1, int(request.get("limit", 200))), 1000)
    counts, matched, total, page = {}, 0, 0, []
    env = {"LC_ALL": "C", "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}
    slot = _slot()  # one of the host's readers: diffs are bounded with the rest
    errors = tempfile.TemporaryFile()  # read after: a pipe zfs filled while stdout was read would hang it
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=errors, env=env)
    try:
        for line in proc.stdout:
            fields = line.rstrip(b"\n").split(b"\t")
            if len(fields) < 4:
                continue
            total += 1
            paths = [_unescape(fields[3])] + ([_unescape(fields[4])] if fields[1] == b"R" and len(fields) > 4 else [])
            if not any(p == prefix.rstrip(b"/") or p.startswith(prefix) for p in paths):
                continue
            matched += 1
            key = fields[1].decode("ascii", "replace")
            counts[key] = counts.get(key, 0) + 1
            if offset < matched <= offset + limit:
                page.append(line.rstrip(b"\n").decode("ascii", "surrogateescape"))
        proc.wait()  # its output ended: it exits once it has destroyed the snapshot it took of "now"
    except BaseException:
        proc.kill()  # stopped early (Tarn's timeout, an error): no zfs diff left behind
        proc.wait()
        raise
    finally:
        os.close(slot)
    errors.seek(0)
    error = errors.read(4096).decode("utf-8", "replace")
    if proc.returncode != 0:
        raise Refused(f"zfs diff: {error.strip()[-300:] or proc.returncode}")
    return {"lines": page, "counts": counts, "matched": matched, "total": total}


ASKED = {"list": listing, "entry": entry, "versions": versions, "read": read}
IDLE = 60.0  # seconds a kept reader waits for its next question


class Late(Exception):
    """Tarn has given up on the question (its deadline passed): the reader lets go of its slot and mounts, and ends."""


def _late(*_):
    raise Late()


def serve(idle=IDLE):
    """Answer questions, a line each way, until the end of the input or idle seconds without one. A refusal or an
    OSError is the question's answer; a question past its deadline (Tarn's timeout, sent with it) ends the reader,
    its slot and mounts let go on the way out; anything else ends it too (Tarn asks once more the usual way, and
    that says what went wrong)."""
    import select  # noqa: PLC0415 - only a kept reader needs it
    import signal  # noqa: PLC0415

    signal.signal(signal.SIGALRM, _late)
    pending = b""
    while True:
        while b"\n" not in pending:
            if not select.select([0], [], [], idle)[0]:
                return
            chunk = os.read(0, 1 << 16)
            if not chunk:
                return
            pending += chunk
        line, pending = pending.split(b"\n", 1)
        question = loads(line)
        asked = ASKED.get(question.get("command"))
        signal.setitimer(signal.ITIMER_REAL, max(0.1, float(question.get("deadline") or 600)))
        try:
            said = {"answer": asked(question["request"])} if asked else {"error": "not a question the reader takes"}
        except Refused as e:
            said = {"refused": str(e)}
        except OSError as e:
            said = {"error": f"{type(e).__name__}: {e}"}
        except Late:
            return
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        out = memoryview((dumps(said) + "\n").encode())
        while out:
            out = out[os.write(1, out) :]


def main(argv):
    command = argv[0]
    if command == "serve":
        return serve(float(argv[1]) if len(argv) > 1 else IDLE)
    if command == "diff":
        return diff(loads(sys.stdin.read()))
    if command == "read":
        return read(loads(sys.stdin.read()))
    if command == "entry":
        return entry(loads(sys.stdin.read()))
    if command == "list":
        return listing(loads(sys.stdin.read()))
    if command == "versions":
        return versions(loads(sys.stdin.read()))
    if command == "mounts":
        return sorted(mounted(argv[1]))
    raise SystemExit(f"unknown command {command}")


if __name__ == "__main__":
    try:
        said = main(sys.argv[1:])
        if sys.argv[1] != "serve":
            print(dumps(said))
    except Refused as e:
        print(e, file=sys.stderr)
        sys.exit(REFUSED)
