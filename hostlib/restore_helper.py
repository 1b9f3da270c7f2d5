"""Tarn's restore, run on the host as root (a transient systemd unit: it outlives Tarn's worker): copies a file or a
folder out of a snapshot back into the live dataset, in place or beside, never through a link.

    restore ARGS STATUS    ARGS: a root-only JSON file Tarn wrote: {mount, snapshot, parts (hex names), how
                           ("place" or "beside"), name (beside: the new name, hex), job}; STATUS: progress, JSON

The source is opened from / with O_NOFOLLOW at every step (through .zfs/snapshot/<name>), the destination's folder
the same way in the live dataset. Everything is copied into a hidden temporary name in the destination folder first
(owner, mode, times, every xattr: POSIX ACLs included; links copied as links; devices, FIFOs and sockets skipped and
counted); only when the copy is whole does it take the place of the original (a file: rename over it; a folder:
the two exchanged, RENAME_EXCHANGE, then the old one removed: the safety snapshot Tarn took first holds it) or its
new name beside it. A copy that fails (no space left, a stop: SIGTERM between two blocks) removes the temporary
copy: the original is as it was. Data is cloned with copy_file_range (ZFS block cloning shares the blocks) where the
pool can, and copied through a buffer where it cannot. Standard library only. Exit 3: refused."""

import ctypes
import errno
import os
import signal
import stat
import sys
import time

from hostlib.wire import dumps, loads

REFUSED = 3
OPEN_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
OPEN_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC
CHUNK = 64 << 20  # bytes a clone may share at once (a stop is seen between two)
BLOCK = 1 << 20  # bytes a plain copy moves at once
BCLONE = "/sys/module/zfs/parameters/zfs_bclone_enabled"
STATUS_EVERY = 0.5
RENAME_NOREPLACE = 1
RENAME_EXCHANGE = 2


class Refused(Exception):
    """A refusal; cause, for the ones Tarn words for its operation (which names no file): a short code."""

    def __init__(self, message, cause=""):
        super().__init__(message)
        self.cause = cause


class Stopped(Exception):
    pass


class Failed(Exception):
    """The copy failed and said so in the status (its temporary copy removed)."""


def shown(raw):
    text = raw.decode("utf-8", "backslashreplace")
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)


def open_below(fd, names, what):
    """fd/names…, each opened with O_NOFOLLOW relative to the one before; fd is closed (also on failure)."""
    try:
        for name in names:
            if name in (b"", b".", b"..") or b"/" in name or b"\0" in name:
                raise Refused(f"refusing {what}: {shown(name)!r} is not a plain name")
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


def open_path(path, what):
    names = [p.encode() for p in path.split("/") if p]
    if not path.startswith("/"):
        raise Refused(f"refusing {path}: not an absolute path")
    return open_below(os.open("/", OPEN_DIR), names, what)


class Copy:
    """Counts and the status file; a SIGTERM asks for a stop, seen between two blocks."""

    def __init__(self, status, total):
        self.status, self.total = status, total
        self.bytes = self.files = self.folders = self.links = self.skipped = 0
        self.stop, self.written = False, 0.0
        self.cloning = True  # does the pool clone blocks (cloning())
        self.buffer = memoryview(bytearray(BLOCK))  # a plain copy's, one for all files
        signal.signal(signal.SIGTERM, self._ask_stop)

    def _ask_stop(self, *_):
        self.stop = True

    def check(self):
        if self.stop:
            raise Stopped("stopped")

    def report(self, state="copying", force=False, **more):
        now = time.monotonic()
        if not force and now - self.written < STATUS_EVERY:
            return
        self.written = now
        fields = {"state": state, "bytes": self.bytes, "total": self.total, "files": self.files,
                  "folders": self.folders, "links": self.links, "skipped": self.skipped, "updated": time.time(), **more}  # fmt: skip
        part = f"{self.status}.part"
        with open(part, "w") as fh:
            fh.write(dumps(fields))
        os.replace(part, self.status)


def _xattrs(src, dst):
    """Every xattr of src onto dst (both descriptors): user.*, security.*, trusted.*, the POSIX ACLs."""
    for name in os.listxattr(src):
        try:
            os.setxattr(dst, name, os.getxattr(src, name))
        except OSError as e:
            if e.errno not in (errno.EOPNOTSUPP, errno.ENOTSUP):
                raise


def _meta(src_st, dst_fd, src_fd=None):
    if src_fd is not None:
        _xattrs(src_fd, dst_fd)
    os.fchown(dst_fd, src_st.st_uid, src_st.st_gid)
    os.fchmod(dst_fd, stat.S_IMODE(src_st.st_mode))  # after chown: it clears set-id bits


def _file(copy, src_dir, name, dst_dir, dst_name, st):
    src = os.open(name, OPEN_FILE, dir_fd=src_dir)
    try:
        dst = os.open(dst_name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600,
                      dir_fd=dst_dir)  # fmt: skip
        try:
            done = 0
            while done < st.st_size:
                copy.check()
                moved = _clone(copy, src, dst, min(CHUNK, st.st_size - done))
                if moved is None:  # the pool does not clone: the rest of the file is copied
                    moved = _plain(copy, src, dst, done, st.st_size - done)
                if moved == 0:
                    break
                done += moved
            if done != st.st_size:  # shorter than it was (a snapshot's file is not): no copy that is not whole
                raise OSError(errno.EIO, f"{shown(name)} changed size while it was copied")
            _meta(st, dst, src)
            os.utime(dst, ns=(st.st_atime_ns, st.st_mtime_ns))
        finally:
            os.close(dst)
    finally:
        os.close(src)
    copy.files += 1


def _clone(copy, src, dst, length):
    """length bytes moved by copy_file_range at both files' offsets, where the pool clones blocks (ZFS's block
    cloning, from a snapshot too: FICLONERANGE refuses another mount); None where it does not (then ZFS would copy
    them itself through the kernel's splice, 64 KiB at a time: slower than a plain copy)."""
    if not copy.cloning:
        return None
    try:
        moved = os.copy_file_range(src, dst, length)
    except OSError as e:
        if e.errno not in (errno.EXDEV, errno.EINVAL, errno.EOPNOTSUPP, errno.ENOSYS):
            raise
        return None
    copy.bytes += moved
    copy.report()
    return moved


def cloning(args):
    """Does the pool clone blocks? Tarn says whether the pool has the feature (zpool get); the module may have
    cloning switched off (zfs_bclone_enabled 0)."""
    if not args.get("cloning", True):
        return False
    try:
        with open(BCLONE) as fh:
            return fh.read().strip() != "0"
    except OSError:
        return False  # no such switch: OpenZFS 2.2.0 or 2.2.1, whose cloning bugs brought the switch: a plain copy


def _plain(copy, src, dst, offset, length):
    """length bytes from offset copied through a buffer of BLOCK bytes, the holes of a sparse file skipped (left
    holes: the copy is as sparse). Under emulation 0.8x of cp's time (cp's copy_file_range, which ZFS without cloning
    hands back to the kernel's splice 64 KiB at a time, was 1.0x; so was sendfile). A stop is seen between blocks."""
    end, done = offset + length, 0
    while offset < end:
        try:
            data = os.lseek(src, offset, os.SEEK_DATA)
            hole = min(os.lseek(src, data, os.SEEK_HOLE), end)
        except OSError as e:
            if e.errno != errno.ENXIO:  # ENXIO: no data past offset (the rest is a hole)
                raise
            data = hole = end
        if data > offset:  # a hole: nothing written, the file's length set at the end
            done += min(data, end) - offset
            copy.bytes += min(data, end) - offset
            offset = min(data, end)
        if data >= end:
            break
        moved = _blocks(copy, src, dst, data, hole - data)
        done, offset = done + moved, data + moved
        if moved < hole - data:
            break  # shorter than it was (a snapshot's file is not)
    os.ftruncate(dst, max(os.fstat(dst).st_size, offset))
    return done


def _blocks(copy, src, dst, offset, length):
    view, done = copy.buffer, 0
    os.lseek(src, offset, os.SEEK_SET)
    os.lseek(dst, offset, os.SEEK_SET)
    while done < length:
        copy.check()
        got = os.readv(src, [view[: min(BLOCK, length - done)]])
        if got == 0:
            break
        out = view[:got]
        while out:
            out = out[os.write(dst, out) :]
        done += got
        copy.bytes += got
        copy.report()
    return done


def _link(copy, src_dir, name, dst_dir, dst_name, st):
    os.symlink(os.readlink(name, dir_fd=src_dir), dst_name, dir_fd=dst_dir)
    os.chown(dst_name, st.st_uid, st.st_gid, dir_fd=dst_dir, follow_symlinks=False)
    os.utime(dst_name, ns=(st.st_atime_ns, st.st_mtime_ns), dir_fd=dst_dir, follow_symlinks=False)
    copy.links += 1


def _folder(copy, src_fd, dst_dir, dst_name, st):
    """src_fd (an open folder) copied as dst_dir/dst_name, everything inside first, its own times last."""
    os.mkdir(dst_name, 0o700, dir_fd=dst_dir)
    dst = os.open(dst_name, OPEN_DIR, dir_fd=dst_dir)
    try:
        with os.scandir(src_fd) as found:
            names = [os.fsencode(e.name) for e in found]
        for name in names:
            copy.check()
            _entry(copy, src_fd, name, dst, name)
        _meta(st, dst, src_fd)
        os.utime(dst, ns=(st.st_atime_ns, st.st_mtime_ns))
    finally:
        os.close(dst)
    copy.folders += 1


def _entry(copy, src_dir, name, dst_dir, dst_name):
    st = os.lstat(name, dir_fd=src_dir)
    if stat.S_ISREG(st.st_mode):
        _file(copy, src_dir, name, dst_dir, dst_name, st)
    elif stat.S_ISLNK(st.st_mode):
        _link(copy, src_dir, name, dst_dir, dst_name, st)
    elif stat.S_ISDIR(st.st_mode):
        fd = os.open(name, OPEN_DIR, dir_fd=src_dir)
        try:
            _folder(copy, fd, dst_dir, dst_name, st)
        finally:
            os.close(fd)
    else:
        copy.skipped += 1  # devices, FIFOs, sockets: not data to restore
    copy.report()


def _remove(dir_fd, name, dev):
    """dir_fd/name and everything inside, never following a link nor crossing into another filesystem (dev)."""
    st = os.lstat(name, dir_fd=dir_fd)
    if st.st_dev != dev:
        raise Refused(f"refusing to remove {shown(name)}: another filesystem is mounted there", "mounted")
    if stat.S_ISDIR(st.st_mode):
        fd = os.open(name, OPEN_DIR, dir_fd=dir_fd)
        try:
            with os.scandir(fd) as found:
                inside = [os.fsencode(e.name) for e in found]
            for child in inside:
                _remove(fd, child, dev)
        finally:
            os.close(fd)
        os.rmdir(name, dir_fd=dir_fd)
    else:
        os.unlink(name, dir_fd=dir_fd)


def _rename2(from_fd, a, to_fd, b, flags):
    """renameat2(2): RENAME_NOREPLACE (never over what is there) or RENAME_EXCHANGE (the two swapped at once)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    if libc.renameat2(from_fd, a, to_fd, b, flags) != 0:
        code = ctypes.get_errno()
        if code == errno.EEXIST:
            raise Refused(f"refusing: {shown(b)} exists already", "exists")
        raise OSError(code, os.strerror(code))


def _size(fd):
    """Bytes of the regular files below an open folder (for the progress bar), without following links."""
    total = 0
    with os.scandir(fd) as found:
        for e in found:
            if e.is_file(follow_symlinks=False):
                total += e.stat(follow_symlinks=False).st_size
            elif e.is_dir(follow_symlinks=False):
                child = os.open(e.name, OPEN_DIR, dir_fd=fd)
                try:
                    total += _size(child)
                finally:
                    os.close(child)
    return total


def restore(args, status):
    names = [bytes.fromhex(p) for p in args["parts"]]
    if not names:
        raise Refused("refusing: name a file or folder below the dataset")
    folder, last = names[:-1], names[-1]
    snapshot = args["snapshot"].encode()
    src_root = open_path(args["mount"], "the dataset")
    src_dir = open_below(src_root, [b".zfs", b"snapshot", snapshot, *folder], "the snapshot's folder")
    try:
        st = os.lstat(last, dir_fd=src_dir)
        dst_dir = open_below(open_path(args["mount"], "the dataset"), folder, "the live folder")
        try:
            return _restore(args, status, src_dir, dst_dir, last, st)
        finally:
            os.close(dst_dir)
    finally:
        os.close(src_dir)


def _staging(dst_dir, job):
    """A private folder of root's (0700, a random name) in the destination folder, opened: the copy is made inside
    it, where no user can reach, and only moved out whole. Refused if what was opened is not the folder just made."""
    name = b".tarn-restore-%d-%s" % (int(job), os.urandom(8).hex().encode())
    os.mkdir(name, 0o700, dir_fd=dst_dir)
    fd = os.open(name, OPEN_DIR, dir_fd=dst_dir)
    st = os.fstat(fd)
    if st.st_uid != 0 or stat.S_IMODE(st.st_mode) != 0o700 or st.st_nlink != 2:
        os.close(fd)
        raise Refused("refusing: the folder made for the copy was swapped before it was opened", "swapped")
    return name, fd


def _unoctal(raw):
    """mountinfo's escapes undone (\\040 a space, \\134 a backslash: a bare backslash is never there), without re
    (its import costs ~0.3 s of a start under emulation)."""
    first, *rest = raw.split(b"\\")
    out = [first]
    for piece in rest:
        octal = piece[:3]
        if len(octal) == 3 and all(0x30 <= c <= 0x37 for c in octal):
            out += [bytes([int(octal, 8) & 0xFF]), piece[3:]]
        else:
            out += [b"\\", piece]
    return b"".join(out)


def _mounted_below(path):
    """Mount points at or below path (bytes), from /proc/self/mountinfo (its octal escapes undone)."""
    found = []
    with open("/proc/self/mountinfo", "rb") as fh:
        for line in fh:
            point = _unoctal(line.split(b" ")[4])
            if point == path or point.startswith(path + b"/"):
                found.append(point)
    return found


def _restore(args, status, src_dir, dst_dir, last, st):
    if stat.S_ISDIR(st.st_mode):
        fd = os.open(last, OPEN_DIR, dir_fd=src_dir)
        try:
            total = _size(fd)
        finally:
            os.close(fd)
    else:
        total = st.st_size if stat.S_ISREG(st.st_mode) else 0
    copy = Copy(status, total)
    copy.cloning = cloning(args)
    dev = os.fstat(dst_dir).st_dev
    if args["how"] == "beside":
        target = bytes.fromhex(args["name"])
        if target in (b"", b".", b"..") or b"/" in target or b"\0" in target or len(target) > 255:
            raise Refused(f"refusing the name {shown(target)!r}: not a plain name of at most 255 bytes")
        there = None
    else:
        target = last
        try:
            there = os.lstat(target, dir_fd=dst_dir)
        except FileNotFoundError:
            there = None
        if there is not None and stat.S_ISLNK(there.st_mode) != stat.S_ISLNK(st.st_mode):
            raise Refused(f"refusing: {shown(target)} is a link now (planted?); nothing is written through it", "link")
        if there is not None and stat.S_ISDIR(there.st_mode) != stat.S_ISDIR(st.st_mode):
            raise Refused(f"refusing: {shown(target)} is a {'folder' if stat.S_ISDIR(there.st_mode) else 'file'} now")
        if there is not None and there.st_dev != dev:
            raise Refused(f"refusing: {shown(target)} is another dataset's mount point")
        if there is not None and stat.S_ISDIR(there.st_mode):
            live = os.fsencode(args["mount"].rstrip("/")) + b"/" + b"/".join(bytes.fromhex(p) for p in args["parts"])
            if _mounted_below(live):
                raise Refused(f"refusing: a dataset or filesystem is mounted inside {shown(target)}", "mounted")
    name, staging = _staging(dst_dir, args["job"])
    try:
        copy.report(force=True)
        try:
            _entry(copy, src_dir, last, staging, b"e")
            copy.check()
        except BaseException as exc:
            state = "stopped" if isinstance(exc, Stopped) else "failed"
            said = "no space left on the pool" if _cause(exc) == "no-space" else str(exc)
            copy.report(state=state, force=True, error="" if state == "stopped" else said[:500], cause=_cause(exc))
            if isinstance(exc, Stopped):
                return copy
            raise Failed(said) from exc
        if there is None:
            _rename2(staging, b"e", dst_dir, target, RENAME_NOREPLACE)  # beside, or the live one gone: never over
        elif stat.S_ISDIR(st.st_mode):
            _rename2(staging, b"e", dst_dir, target, RENAME_EXCHANGE)  # the live folder goes into the private one
            copy.report(state="removing", force=True)
        else:
            os.rename(b"e", target, src_dir_fd=staging, dst_dir_fd=dst_dir)  # atomic: the old file or the restored
        copy.report(state="done", force=True, name=shown(target))
        return copy
    finally:
        try:
            if _exists(staging, b"e"):
                _remove(staging, b"e", dev)  # a half copy, or the replaced live folder: both private
        finally:
            os.close(staging)
            try:
                os.rmdir(name, dir_fd=dst_dir)  # empty by now; a folder planted under its name is not (rmdir fails)
            except OSError:
                pass


def _cause(exc):
    """The short code of what went wrong, for the words Tarn's operation uses (they name no file)."""
    if isinstance(exc, OSError) and exc.errno == errno.ENOSPC:
        return "no-space"
    return getattr(exc, "cause", "")


def _exists(dir_fd, name):
    try:
        os.lstat(name, dir_fd=dir_fd)
        return True
    except FileNotFoundError:
        return False


def main(argv):
    command, args_path, status = argv[0], argv[1], argv[2]
    if command != "restore":
        raise SystemExit(f"unknown command {command}")
    st = os.stat(args_path, follow_symlinks=False)
    if st.st_uid != 0 or st.st_mode & 0o077:
        raise Refused(f"refusing {args_path}: not root's own file")
    with open(args_path) as fh:
        args = loads(fh.read())
    os.unlink(args_path)  # read once: nothing of a job is left in /run/tarn but its status
    try:
        restore(args, status)
    except Refused as e:
        Copy(status, 0).report(state="failed", force=True, error=str(e), cause=e.cause)
        raise
    except Failed:
        return 1
    except OSError as e:  # before the copy began (a folder on the way unreadable)
        said = "no space left on the pool" if _cause(e) == "no-space" else f"{e.strerror} ({e.filename or ''})"
        Copy(status, 0).report(state="failed", force=True, error=said[:500], cause=_cause(e))
        return 1
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except Refused as e:
        print(e, file=sys.stderr)
        sys.exit(REFUSED)
