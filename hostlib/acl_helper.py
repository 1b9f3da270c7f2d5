"""Tarn's ACL helper, run on the host as root: reads, lists and changes folders of a dataset that its users can
write, so never through a link. Every component from / is opened relative to its parent with O_NOFOLLOW; ACLs are
read and written as the kernel's xattrs on an open descriptor. A walk stays on the dataset it starts in, skips links, and skips files with more than
one name (a hard link may also live outside the folder); the folders inside its top one are shared out among up to
four forked processes (one a CPU), the first summing their counts.

    read    ROOT PARTS                 the folder and each folder above it: JSON
    list    ROOT PARTS LIMIT           its subfolders: JSON
    resolve NAMES                      users and groups → ids through NSS: JSON
    account NAME                       a user's uid and groups: JSON
    set                                one folder changed ({root, parts, spec} on stdin): JSON
    count   ARGS STATUS                the preview: what a walk would change, progress written to STATUS
    apply   ARGS STATUS                the walk itself (SIGTERM stops it cleanly between two files)
    project ARGS STATUS                a folder and everything inside given a project id (quotas)

ARGS: a root-only JSON file {root, parts, spec or project} Tarn wrote.

Standard library only (its source is sent to the host's python3). Exit 3: refused (a link, not a folder)."""

import errno
import fcntl
import grp
import os
import pwd
import resource
import select
import signal
import stat
import struct
import sys
import time

from hostlib.wire import dumps, loads

REFUSED = 3
ACCESS, DEFAULT = "system.posix_acl_access", "system.posix_acl_default"
OPEN_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
OPEN_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
STATUS_EVERY = 0.5  # seconds between two progress writes


class Refused(Exception):
    pass


def _xattr(target, name, follow=True):
    try:
        return os.getxattr(target, name, follow_symlinks=follow)
    except OSError as e:
        if e.errno in (errno.ENODATA, errno.EOPNOTSUPP):
            return None
        raise


def open_chain(root, parts, chain=None):
    """A descriptor of root/parts…: every component from / opened relative to its parent without following a
    link. chain (a list) gets each folder's stat and access ACL on the way."""
    names = [p for p in root.split("/") if p] + list(parts)
    if not root.startswith("/") or any(p in (".", "..") or "/" in p or "\0" in p for p in names):
        raise Refused(f"refusing {root}: not an absolute path of plain folders")
    fd = os.open("/", OPEN_DIR)
    path = ""
    try:
        if chain is not None:
            chain.append(_entry("/", fd))
        for part in names:
            path += "/" + part
            try:
                child = os.open(part, OPEN_DIR, dir_fd=fd)
            except OSError as e:
                if e.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise Refused(f"refusing {path}: a link or not a folder") from None
                if e.errno == errno.ENOENT:
                    raise Refused(f"refusing {path}: no such folder") from None
                raise
            os.close(fd)
            fd = child
            if chain is not None:
                chain.append(_entry(path, fd))
    except BaseException:
        os.close(fd)
        raise
    return fd


def _entry(path, fd):
    st = os.fstat(fd)
    blob = _xattr(fd, ACCESS)
    return {
        "path": path,
        "uid": st.st_uid,
        "gid": st.st_gid,
        "mode": st.st_mode & 0o7777,
        "dev": st.st_dev,
        "access": blob.hex() if blob else None,
    }


def _ids(blob):
    """(tag, id) of the named entries of an ACL xattr."""
    if not blob:
        return []
    return [(t, i) for t, _p, i in struct.iter_unpack("<HHI", blob[4:]) if t in (0x02, 0x08)]


def _user(uid):
    try:
        return pwd.getpwuid(uid).pw_name
    except (KeyError, OverflowError):
        return str(uid)


def _group(gid):
    try:
        return grp.getgrgid(gid).gr_name
    except (KeyError, OverflowError):
        return str(gid)


def read(root, parts):
    chain = []
    fd = open_chain(root, parts, chain)
    try:
        default = _xattr(fd, DEFAULT)
    finally:
        os.close(fd)
    last = chain[-1]
    last["default"] = default.hex() if default else None
    names = {"u": {}, "g": {}}
    for blob in (bytes.fromhex(last["access"]) if last["access"] else b"", default or b""):
        for tag, i in _ids(blob):
            if tag == 0x02:
                names["u"][i] = _user(i)
            else:
                names["g"][i] = _group(i)
    mount_dev = chain[len([p for p in root.split("/") if p])]["dev"]
    return {
        "chain": chain,
        "owner": _user(last["uid"]),
        "group": _group(last["gid"]),
        "names": names,
        "other_dataset": last["dev"] != mount_dev,
    }


def _safe_name(name):
    return not any(ord(c) < 32 or ord(c) == 127 or 0xD800 <= ord(c) <= 0xDFFF for c in name)


def listing(root, parts, limit):
    fd = open_chain(root, parts)
    try:
        dev = os.fstat(fd).st_dev
        folders, hidden = [], 0
        with os.scandir(fd) as found:
            for entry in found:
                if not entry.is_dir(follow_symlinks=False) or (not parts and entry.name == ".zfs"):
                    continue
                if not _safe_name(entry.name):
                    hidden += 1
                    continue
                folders.append((entry.name, entry.stat(follow_symlinks=False).st_dev != dev))
    finally:
        os.close(fd)
    folders.sort()
    return {
        "folders": [{"name": n, "other_dataset": o} for n, o in folders[:limit]],
        "more": max(0, len(folders) - limit),
        "hidden": hidden,
    }


def _lookup(value, by_name, by_id, attr_id, attr_name):
    try:
        found = by_id(int(value)) if value.isascii() and value.isdigit() else by_name(value)
    except (KeyError, OverflowError, ValueError):
        return None
    return [getattr(found, attr_id), getattr(found, attr_name)]


def resolve(names):
    return {
        "users": {n: _lookup(n, pwd.getpwnam, pwd.getpwuid, "pw_uid", "pw_name") for n in names.get("users", [])},
        "groups": {n: _lookup(n, grp.getgrnam, grp.getgrgid, "gr_gid", "gr_name") for n in names.get("groups", [])},
    }


def account(name):
    found = _lookup(name, pwd.getpwnam, pwd.getpwuid, "pw_uid", "pw_name")
    if not found:
        return {"account": None}
    uid, user = found
    gid = pwd.getpwuid(uid).pw_gid
    return {"account": {"uid": uid, "name": user, "gid": gid, "gids": sorted(set(os.getgrouplist(user, gid)))}}


# --- changing -----------------------------------------------------------------------------------------------------


def _without_x(blob):
    out = bytearray(blob)
    for offset in range(4, len(out), 8):
        out[offset + 2] &= ~1  # e_perm's low byte (little-endian u16 after the u16 tag)
    return bytes(out)


def _minimal(blob):
    return len(blob) == 4 + 3 * 8


def _mode_bits(blob):
    """The rwx bits a minimal ACL stands for."""
    perms = {t: p for t, p, _i in struct.iter_unpack("<HHI", blob[4:])}
    return (perms[0x01] << 6) | (perms[0x04] << 3) | perms[0x20]


def _differs(current, mode, wanted):
    """Would writing `wanted` as the access ACL change anything? (A minimal ACL is kept as the mode alone.)"""
    if _minimal(wanted):
        return current is not None or (mode & 0o777) != _mode_bits(wanted)
    return current != wanted


class Spec:
    def __init__(self, spec):
        self.access = bytes.fromhex(spec["access"])
        self.access_nox = _without_x(self.access)
        self.default = bytes.fromhex(spec["default"]) if spec.get("default") else None
        self.uid = -1 if spec.get("uid") is None else int(spec["uid"])
        self.gid = -1 if spec.get("gid") is None else int(spec["gid"])
        self.special = int(spec.get("special", 0)) & 0o3000
        self.minimal = _minimal(self.access)


def _access(fd, st, wanted, write, tally):
    """The access ACL of an open file or folder made `wanted` (a minimal one is only the mode: chmod, which also works
    where acltype=off); tallies an ACL taken away."""
    now = _xattr(fd, ACCESS)
    if not _differs(now, st.st_mode, wanted):
        return False
    if now is not None and _minimal(wanted):
        tally["acl_removed"] += 1
    if write:
        if _minimal(wanted) and now is None:
            os.fchmod(fd, (st.st_mode & 0o7000) | _mode_bits(wanted))
        else:
            os.setxattr(fd, ACCESS, wanted)
    return True


def _owner(fd, st, spec, write, tally):
    if spec.uid in (-1, st.st_uid) and spec.gid in (-1, st.st_gid):
        return False
    if spec.uid not in (-1, st.st_uid):
        tally["owner_changed"] += 1
    if write:
        os.fchown(fd, spec.uid, spec.gid)
    return True


def _folder(fd, spec, write, tally):
    """One folder: True if it was (or would be) changed."""
    st = os.fstat(fd)
    changed = _owner(fd, st, spec, write, tally)
    changed |= _access(fd, st, spec.access, write, tally)
    default_now = _xattr(fd, DEFAULT)
    if default_now != spec.default:
        changed = True
        if default_now is not None and spec.default is None:
            tally["acl_removed"] += 1
        if write:
            if spec.default:
                os.setxattr(fd, DEFAULT, spec.default)
            else:
                os.removexattr(fd, DEFAULT)
    mode = os.fstat(fd).st_mode if write else st.st_mode
    if (mode & 0o7000) != spec.special:
        changed = True
        if write:
            os.fchmod(fd, (mode & 0o777) | spec.special)
    return changed


def _read_args(path):
    """A walk's arguments, from the root-only file Tarn wrote (never argv: systemd would expand $ and % in a
    folder's name there)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    with os.fdopen(fd) as fh:
        return loads(fh.read())


def set_one(root, parts, spec):
    top = open_chain(root, [])
    dev = os.fstat(top).st_dev
    os.close(top)
    fd = open_chain(root, parts)
    tally = {"acl_removed": 0, "owner_changed": 0}
    try:
        if os.fstat(fd).st_dev != dev:
            raise Refused(f"refusing {root}/{'/'.join(parts)}: another filesystem is mounted there")
        before = _xattr(fd, ACCESS)
        changed = _folder(fd, spec, True, tally)
        after = _xattr(fd, ACCESS)
    finally:
        os.close(fd)
    return {"changed": changed, "before": before.hex() if before else None, "after": after.hex() if after else None}


MAX_DEPTH = 4000  # levels below the folder a walk goes (one open descriptor each); deeper is counted, not walked
WORKERS = max(1, min(4, len(os.sched_getaffinity(0))))  # processes sharing a walk's top folders (setfacl -R: one)
COUNTS = ("folders", "files", "changed", "links", "hardlinked", "other_datasets", "other", "failed", "too_deep",
          "acl_removed", "owner_changed")  # fmt: skip


class Walk:
    """The recursive preview or apply, one folder at a time (open descriptors: one per level). The folders inside
    the top one are shared out among WORKERS forked processes, each walking its own with the same rules; the first
    process sums what they count."""

    def __init__(self, spec, write, status, workers=None):
        self.spec, self.write, self.status = spec, write, status
        self.workers = WORKERS if workers is None else workers
        self.counts = {**dict.fromkeys(COUNTS, 0), "done": False, "stopped": False, "error": ""}
        self.stop = False
        self.written = 0.0
        self.pipe = None  # a worker's: its counts go to the first process, not to the status file

    def report(self, force=False):
        now = time.monotonic()
        if not force and now - self.written < STATUS_EVERY:
            return
        self.written = now
        if self.pipe is not None:
            os.write(self.pipe, (dumps(self.counts) + "\n").encode())  # < PIPE_BUF: one write, whole
            return
        self._write_status(self.counts)

    def _write_status(self, counts):
        temporary = f"{self.status}.new"
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(dumps(counts))
        os.replace(temporary, self.status)

    def change_folder(self, fd):
        return _folder(fd, self.spec, self.write, self.counts)

    def change_file(self, fd, st):
        """One regular file with one name, open: True if it was (or would be) changed. Files get x only where they
        had some (setfacl's X)."""
        spec = self.spec
        wanted = spec.access if st.st_mode & 0o111 else spec.access_nox
        changed = (spec.uid != -1 or spec.gid != -1) and _owner(fd, st, spec, self.write, self.counts)
        if not spec.minimal:  # the common case, an ACL: written unless the file has this one already
            try:
                now = os.getxattr(fd, ACCESS)
            except OSError:
                now = None
            if now == wanted:
                return changed
            if self.write:
                os.setxattr(fd, ACCESS, wanted)
            return True
        return _access(fd, st, wanted, self.write, self.counts) or changed

    def files(self, fd, entries):
        """Each file is opened without following a link (and without blocking on a FIFO or taking a terminal;
        the unit may open no device at all: DevicePolicy=closed), checked on the open descriptor (a regular file
        with one name), and changed through it: a name swapped for a link or a hard link after the listing changes
        nothing. (The loop keeps its lookups local: it runs once per file, 100,000 times in a big share.)"""
        counts, change, opened, fstat, close = self.counts, self.change_file, os.open, os.fstat, os.close
        files = changed = 0
        for n, entry in enumerate(entries):
            if self.stop:
                break
            try:
                if not entry.is_file(follow_symlinks=False):
                    counts["links" if entry.is_symlink() else "other"] += 1
                    continue
                try:
                    file_fd = opened(entry.name, OPEN_FILE, dir_fd=fd)
                except OSError as e:
                    if e.errno == errno.ELOOP:
                        counts["links"] += 1
                        continue
                    raise
                try:
                    st = fstat(file_fd)
                    if st.st_nlink > 1 or not stat.S_ISREG(st.st_mode):
                        counts["hardlinked" if stat.S_ISREG(st.st_mode) else "other"] += 1
                        continue
                    files += 1
                    changed += change(file_fd, st)
                finally:
                    close(file_fd)
            except FileNotFoundError:
                pass  # removed since it was listed
            except OSError:
                counts["failed"] += 1
            if n & 255 == 255:
                counts["files"] += files
                counts["changed"] += changed
                files = changed = 0
                self.report()
        counts["files"] += files
        counts["changed"] += changed

    def folder(self, fd):
        """Change one folder (a failure is counted: what is inside is still walked) and its files; its subfolders'
        names, for the caller to walk."""
        self.counts["folders"] += 1
        try:
            self.counts["changed"] += self.change_folder(fd)
        except OSError:
            self.counts["failed"] += 1
        subfolders, files = [], []
        with os.scandir(fd) as found:
            for entry in found:
                if self.stop:
                    break
                try:
                    is_dir = entry.is_dir(follow_symlinks=False)
                except OSError:
                    is_dir = False
                (subfolders if is_dir else files).append(entry)
        self.files(fd, files)
        return [e.name for e in subfolders]

    def run(self, root, parts):
        top = open_chain(root, parts)
        dev = os.fstat(top).st_dev
        try:
            names = [n for n in self.folder(top) if parts or n != ".zfs"]
            if self.workers > 1 and len(names) > 1:
                self._shared_out(top, dev, names)
            else:
                self._descend(top, dev, names)
        finally:
            os.close(top)
        self.counts["done"], self.counts["stopped"] = not self.stop, self.stop
        self.report(force=True)

    def _descend(self, top, dev, names):
        """Everything below the folder top (already changed), its subfolders' names given."""
        stack = [(top, iter(names))]
        while stack and not self.stop:
            fd, names = stack[-1]
            name = next(names, None)
            if name is None:
                if fd != top:
                    os.close(fd)
                stack.pop()
                continue
            if len(stack) > MAX_DEPTH:
                self.counts["too_deep"] += 1
                continue
            try:
                child = os.open(name, OPEN_DIR, dir_fd=fd)
            except OSError as e:
                if e.errno in (errno.ELOOP, errno.ENOTDIR):
                    self.counts["links"] += 1
                elif e.errno == errno.EMFILE:
                    self.counts["too_deep"] += 1
                elif e.errno != errno.ENOENT:
                    self.counts["failed"] += 1
                continue
            if os.fstat(child).st_dev != dev:
                self.counts["other_datasets"] += 1
                os.close(child)
                continue
            try:
                stack.append((child, iter(self.folder(child))))
            except OSError:
                self.counts["failed"] += 1
                os.close(child)
            self.report()
        for fd, _ in stack:
            if fd != top:
                os.close(fd)

    def _shared_out(self, top, dev, names):
        """The top folder's subfolders dealt out to forked workers (round robin), each reporting its counts on a
        pipe; SIGTERM here is passed on to them. Their counts are summed into this process's (the top folder's). A
        worker that ends without its last count (killed, crashed) fails the walk, as one process's death would; so
        does anything going wrong here, once every worker started is stopped and its counts read."""
        workers, finished, mine = {}, [], dict(self.counts)
        try:
            for share in (names[i :: self.workers] for i in range(self.workers)):
                if self.stop:
                    break
                read_end, write_end = os.pipe()
                pid = os.fork()
                if pid == 0:
                    for fd in (read_end, *workers):  # the earlier workers' pipes are not this one's
                        os.close(fd)
                    self._worker(top, dev, share, write_end)
                os.close(write_end)
                workers[read_end] = [pid, b"", {}]
            self._collect(workers, finished, mine)
        except BaseException:
            self.stop = True
            self._collect(workers, finished, mine)  # stopped, read to the end and reaped: none left walking
            raise
        error = next((c["error"] for c in finished if c.get("error")), "")
        if any(c.get("stopped") for c in finished):
            self.stop = True
        if error:
            raise RuntimeError(error)

    def _collect(self, workers, finished, mine):
        """Read the workers' counts until each has ended (SIGTERM passed on once stop is set), summing them."""
        told = False
        while workers:
            if self.stop and not told:
                for pid, _, _ in workers.values():
                    os.kill(pid, signal.SIGTERM)
                told = True
            ready, _, _ = select.select(list(workers), [], [], STATUS_EVERY / 5)
            for fd in ready:
                chunk = os.read(fd, 65536)
                entry = workers[fd]
                if chunk:
                    *lines, entry[1] = (entry[1] + chunk).split(b"\n")
                    if lines:
                        entry[2] = loads(lines[-1])
                    continue
                os.close(fd)
                code = os.waitstatus_to_exitcode(os.waitpid(entry[0], 0)[1])
                last = entry[2]
                if not last.get("error") and (code != 0 or not (last.get("done") or last.get("stopped"))):
                    last = {**last, "error": f"a worker ended without its last count (exit status {code})"}
                finished.append(last)
                del workers[fd]
            self.counts = _summed(mine, finished + [w[2] for w in workers.values()])
            self.report()

    def _worker(self, top, dev, share, pipe):
        """A forked worker: its share of the top folder's subfolders walked, its counts (from nought) sent up; it
        never returns."""
        signal.signal(signal.SIGTERM, lambda *_: setattr(self, "stop", True))  # the first process passes it on
        self.counts = {**dict.fromkeys(COUNTS, 0), "done": False, "stopped": False, "error": ""}
        self.pipe, self.written, code = pipe, 0.0, 0
        try:
            self._descend(top, dev, share)
        except BaseException as e:  # said to the first process, which fails the walk with it
            self.counts["error"], code = (str(e) or type(e).__name__)[:500], 1
        self.counts["done"], self.counts["stopped"] = not self.stop, self.stop
        try:
            self.report(force=True)
        finally:
            os._exit(code)


def _summed(mine, theirs):
    total = dict(mine)
    for counts in theirs:
        for key in COUNTS:
            total[key] += counts.get(key, 0)
    return total


# linux/fs.h: struct fsxattr (28 bytes) and its ioctls, as chattr -p and `zfs project` use them
FSXATTR = struct.Struct("=IIIII8x")
FS_IOC_FSGETXATTR = (2 << 30) | (FSXATTR.size << 16) | (ord("X") << 8) | 31
FS_IOC_FSSETXATTR = (1 << 30) | (FSXATTR.size << 16) | (ord("X") << 8) | 32
# The inherit flag as OpenZFS takes it in fsx_xflags: chattr's FS_PROJINHERIT_FL, not the generic FS_XFLAG_PROJINHERIT
# (0x200, refused with EOPNOTSUPP), as `zfs project -s` sets it (the lab: OpenZFS 2.3.2).
FS_XFLAG_PROJINHERIT = 0x20000000


def project_of(fd):
    """(project id, inherit flag) of an open file or folder."""
    xflags, _extsize, _nextents, projid, _cow = FSXATTR.unpack(fcntl.ioctl(fd, FS_IOC_FSGETXATTR, bytes(FSXATTR.size)))
    return projid, bool(xflags & FS_XFLAG_PROJINHERIT)


def _set_project(fd, project, inherit, write):
    raw = bytearray(fcntl.ioctl(fd, FS_IOC_FSGETXATTR, bytes(FSXATTR.size)))
    xflags, extsize, nextents, projid, cow = FSXATTR.unpack(raw)
    wanted = (xflags | FS_XFLAG_PROJINHERIT) if inherit else xflags
    if projid == project and wanted == xflags:
        return False
    if write:
        fcntl.ioctl(fd, FS_IOC_FSSETXATTR, FSXATTR.pack(wanted, extsize, nextents, project, cow))
    return True


class ProjectWalk(Walk):
    """A folder and everything inside given a project id (folders also the inherit flag, so what is made inside
    later counts against the same project): what `zfs project -p ID -rs` does, without following a link."""

    def __init__(self, project, write, status):
        super().__init__(None, write, status)
        self.project = project

    def change_folder(self, fd):
        return _set_project(fd, self.project, True, self.write)

    def change_file(self, fd, st):
        return _set_project(fd, self.project, False, self.write)


def _walk(walk, root, parts):
    signal.signal(signal.SIGTERM, lambda *_: setattr(walk, "stop", True))
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # one descriptor per level of the tree
    try:
        walk.run(root, parts)
    except Exception as e:  # said in the status, which Tarn reads
        walk.counts["error"] = str(e)[:500]
        walk.report(force=True)
        raise
    return walk.counts


def main(argv):
    command, args = argv[0], argv[1:]
    if command == "read":
        return read(args[0], loads(args[1]))
    if command == "list":
        return listing(args[0], loads(args[1]), int(args[2]))
    if command == "resolve":
        return resolve(loads(args[0]))
    if command == "account":
        return account(args[0])
    if command == "set":  # its arguments on stdin: an ACL of thousands of entries is past what argv takes
        given = loads(sys.stdin.read())
        return set_one(given["root"], given["parts"], Spec(given["spec"]))
    if command in ("count", "apply", "project"):
        given, status = _read_args(args[0]), args[1]
        if command == "project":
            walk = ProjectWalk(int(given["project"]), True, status)
        else:
            walk = Walk(Spec(given["spec"]), command == "apply", status)
        return _walk(walk, given["root"], given["parts"])
    raise SystemExit(f"unknown command {command}")


if __name__ == "__main__":
    try:
        print(dumps(main(sys.argv[1:])))
    except Refused as e:
        print(e, file=sys.stderr)
        sys.exit(REFUSED)
