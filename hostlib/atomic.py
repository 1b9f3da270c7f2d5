"""The host's small programs, run in-process locally and sent verbatim over SSH: write_if_changed (the one
atomic file write), folder (owner, group and mode of a folder reached without following any symlink),
scratch (a benchmark's scratch folder in a share, made and removed without following any symlink),
mount_folder (a dataset's mount folder checked, and sealed, without following any symlink) and
module_parameter (a kernel module's runtime parameter).

This module must stay self-contained (standard library only, no other imports from Tarn):
the SSH transport sends its source to the remote python3. It imports only what every write needs (re, tempfile
and shutil cost ~0.3-0.5 s each a start on the emulated lab guest: every config write pays its imports).
"""

import fcntl
import grp
import os
import pwd
import stat
import struct
import sys

SCRATCH_PREFIX = "tarnbench-"  # a scratch folder is tarnbench-<1 to 12 digits>


def _is_scratch(name):
    digits = name[len(SCRATCH_PREFIX) :]
    return name.startswith(SCRATCH_PREFIX) and 1 <= len(digits) <= 12 and digits.isascii() and digits.isdigit()


def _allowed(path, allowed_dirs):
    """The absolute path if it lies in allowed_dirs (or is one of them, for exact files) and no symlink is on the
    way; PermissionError otherwise."""
    path = os.path.abspath(path)
    parent = os.path.dirname(path)
    if path not in allowed_dirs and not any(
        parent == d.rstrip("/") or parent.startswith(d.rstrip("/") + "/") for d in allowed_dirs
    ):
        raise PermissionError(f"refusing {path}: outside the allowed directories")
    if os.path.realpath(parent) != parent:
        raise PermissionError(f"refusing {path}: its directory is behind a symlink")
    if os.path.islink(path):
        raise PermissionError(f"refusing {path}: it is a symlink")
    return path


def remove_if_present(path, allowed_dirs):
    """Remove a file Tarn owns; True if it was there."""
    path = _allowed(path, allowed_dirs)
    try:
        os.unlink(path)
    except FileNotFoundError:
        return False
    return True


def write_if_changed(path, data, mode, allowed_dirs, group=""):
    """Write bytes to path atomically unless it already holds them; returns True if it changed. group: the file's
    group by name (root's otherwise), for a daemon that reads it as that group (NUT's upsd as nut).

    Refuses symlinks and paths outside allowed_dirs (directories, or exact files). Temp file in the same directory, fsync,
    os.replace, then fsync the directory, so a crash leaves either the old or the new file.
    """
    path = _allowed(path, allowed_dirs)
    parent = os.path.dirname(path)
    gid = grp.getgrnam(group).gr_gid if group else 0
    try:
        with open(path, "rb") as fh:
            st = os.fstat(fh.fileno())
            if fh.read() == data and (st.st_mode & 0o7777) == mode and (not group or st.st_gid == gid):
                return False
    except FileNotFoundError:
        pass
    os.makedirs(parent, exist_ok=True)
    tmp = os.path.join(parent, f".tarn-{os.urandom(6).hex()}")  # as tempfile.mkstemp makes it, without its imports
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            if group:
                os.fchown(fh.fileno(), -1, gid)
            os.fchmod(fh.fileno(), mode)
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    dirfd = os.open(parent, os.O_RDONLY)
    try:
        os.fsync(dirfd)
    finally:
        os.close(dirfd)
    return True


def _parts(path):
    parts = [part for part in path.split("/") if part]
    if not path.startswith("/") or not parts or any(part in (".", "..") for part in parts):
        raise PermissionError(f"refusing {path}: not an absolute path of plain folders")
    return parts


def _open_folder(parts, path, create_last=False):
    """A descriptor of /parts…, every component opened relative to its parent with O_NOFOLLOW."""
    fd = os.open("/", os.O_RDONLY | os.O_DIRECTORY)
    try:
        for index, part in enumerate(parts):
            if create_last and index == len(parts) - 1:
                try:
                    os.mkdir(part, 0o700, dir_fd=fd)
                except FileExistsError:
                    pass
            try:
                child = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            except OSError:
                raise PermissionError(
                    f"refusing {path}: /{'/'.join(parts[: index + 1])} is a symlink or not a folder"
                ) from None
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


def folder(path, owner, group, mode, create=False):
    """Set a folder's owner, group and mode as root on a tree users can write, so never through a link: every
    component from / is opened relative to its parent with O_NOFOLLOW, and the change is made on the open
    descriptor (fchown, fchmod). create: make the last component first if it is missing (mode 0700 until set).
    Returns 'owner:group mode' before and after, as `stat -c '%U:%G %a'` would print them."""
    uid, gid = pwd.getpwnam(owner).pw_uid, grp.getgrnam(group).gr_gid
    fd = _open_folder(_parts(path), path, create)
    try:
        before = _owner(os.fstat(fd))
        os.fchown(fd, uid, gid)
        os.fchmod(fd, mode)
        return f"{before} → {_owner(os.fstat(fd))}"
    finally:
        os.close(fd)


TAG_XATTR = "trusted.tarn.made-by"  # only root sets trusted.*: no SMB or NFS client can forge it


def scratch(path, create, tag=""):
    """A benchmark's scratch folder (its name tarnbench-<n>) in a folder users can write: made new (it must not
    exist: a name planted in advance is refused), mode 0777 so a squashed NFS client or a Samba account can write
    in it (not sticky: fs.protected_regular would refuse root reopening the files a squashed client made); or removed with everything in it, never through a link (rmtree relative to its parent's descriptor).
    With a tag: made with it (an xattr in the trusted namespace), and removed only if it still carries it; a
    folder of that name made by anyone else is left alone ("not ours").
    Returns created, removed, absent or not ours."""
    parts = _parts(path)
    if not _is_scratch(parts[-1]):
        raise PermissionError(f"refusing {path}: not a benchmark scratch folder")
    parent = _open_folder(parts[:-1], path)
    try:
        if create:
            try:
                os.mkdir(parts[-1], 0o700, dir_fd=parent)
            except FileExistsError:
                raise PermissionError(f"refusing {path}: it exists already") from None
            fd = os.open(parts[-1], os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=parent)
            os.fchmod(fd, 0o777)
            if tag:
                os.setxattr(fd, TAG_XATTR, tag.encode())
            os.close(fd)
            return "created"
        try:
            st = os.stat(parts[-1], dir_fd=parent, follow_symlinks=False)
        except FileNotFoundError:
            return "absent"
        if not stat.S_ISDIR(st.st_mode):
            raise PermissionError(f"refusing {path}: a symlink or not a folder")
        if st.st_dev != os.fstat(parent).st_dev:
            raise PermissionError(f"refusing {path}: something is mounted on it")
        if tag and _tag_of(parts[-1], parent) != tag:
            return "not ours"
        # Root's alone first: a client of the share still writing into it (or planting links there while the run
        # ends) would otherwise refill it behind rmtree and keep it ("Directory not empty").
        fd = os.open(parts[-1], os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=parent)
        try:
            os.fchmod(fd, 0o700)
        finally:
            os.close(fd)
        import shutil  # noqa: PLC0415 - only here: a removal is rare, and its import costs every write

        shutil.rmtree(parts[-1], dir_fd=parent)
        return "removed"
    finally:
        os.close(parent)


def _tag_of(name, parent):
    fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=parent)
    try:
        return os.getxattr(fd, TAG_XATTR).decode()
    except OSError:  # no such attribute
        return ""
    finally:
        os.close(fd)


# chattr's ioctls (linux/fs.h: _IOR/_IOW('f', 1 and 2, long)); the kernel reads and writes an int through them
FS_IOC_GETFLAGS = (2 << 30) | (struct.calcsize("l") << 16) | (ord("f") << 8) | 1
FS_IOC_SETFLAGS = (1 << 30) | (struct.calcsize("l") << 16) | (ord("f") << 8) | 2
FS_IMMUTABLE_FL = 0x10


class SealFailed(Exception):
    """The kernel refused the immutable flag (a filesystem without it, or no CAP_LINUX_IMMUTABLE)."""


def mount_folder(path, seal):
    """The folder a dataset mounts on, reached without following any link: every component from / opened relative
    to its parent with O_NOFOLLOW (PermissionError naming the one that is a link or not a folder), so a link planted
    as the folder or anywhere on its way is refused, never followed. seal: make it immutable (FS_IOC_SETFLAGS on the
    open descriptor, as chattr +i would, but on the folder that was checked), so that while nothing is mounted on it
    nobody can put a file or a link in it; made first (0755) where missing. Returns mounted (something is mounted
    there: nothing done), sealed, checked (seal false) or absent (seal false, nothing there yet)."""
    parts = _parts(path)
    parent = _open_folder(parts[:-1], path)
    try:
        if seal:
            try:
                os.mkdir(parts[-1], 0o755, dir_fd=parent)
            except FileExistsError:
                pass
        try:
            fd = os.open(parts[-1], os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=parent)
        except FileNotFoundError:
            return "absent"
        except OSError:
            raise PermissionError(f"refusing {path}: {path} is a symlink or not a folder") from None
        try:
            if os.fstat(fd).st_dev != os.fstat(parent).st_dev:
                return "mounted"
            if not seal:
                return "checked"
            try:
                flags = struct.unpack("i", fcntl.ioctl(fd, FS_IOC_GETFLAGS, bytes(8))[:4])[0]
                fcntl.ioctl(fd, FS_IOC_SETFLAGS, struct.pack("i", flags | FS_IMMUTABLE_FL) + bytes(4))
            except OSError as exc:
                raise SealFailed(f"cannot make {path} immutable: {exc.strerror}") from None
            return "sealed"
        finally:
            os.close(fd)
    finally:
        os.close(parent)


def module_parameter(module, name, value):
    """Set /sys/module/<module>/parameters/<name> at runtime (the kernel checks the value). Plain names only, opened
    without following links; returns the value before."""
    if not (module.isidentifier() and name.isidentifier()):
        raise PermissionError(f"refusing module parameter {module}/{name}: not plain names")
    path = f"/sys/module/{module}/parameters/{name}"
    try:
        fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW)
    except FileNotFoundError:
        raise FileNotFoundError(f"no module parameter {module}.{name} on this host") from None
    try:
        before = os.read(fd, 4096).decode().strip()
        os.lseek(fd, 0, os.SEEK_SET)
        os.write(fd, str(value).encode())
    finally:
        os.close(fd)
    return before


def _owner(st):
    def name(lookup, number):
        try:
            return lookup(number)[0]
        except KeyError:
            return str(number)

    return f"{name(pwd.getpwuid, st.st_uid)}:{name(grp.getgrgid, st.st_gid)} {format(st.st_mode & 0o7777, 'o')}"


def _main():
    """Remote entry. Write: argv = path, octal mode, allowed dirs...; data on stdin; prints the outcome.
    Folder: argv = --folder, path, owner, group, octal mode, create (0/1); prints before → after."""
    try:
        if sys.argv[1] == "--folder":
            path, owner, group, mode, create = sys.argv[2:7]
            print(folder(path, owner, group, int(mode, 8), create == "1"))
            return
        if sys.argv[1] == "--scratch":
            print(scratch(sys.argv[2], sys.argv[3] == "create", *sys.argv[4:5]))
            return
        if sys.argv[1] == "--remove":
            print("removed" if remove_if_present(sys.argv[2], sys.argv[3:]) else "absent")
            return
        if sys.argv[1] == "--module-parameter":
            print(module_parameter(*sys.argv[2:5]))
            return
        if sys.argv[1] == "--mount-folder":
            print(mount_folder(sys.argv[2], sys.argv[3] == "seal"))
            return
        path, mode, *allowed = sys.argv[1:]
        mode, _, group = mode.partition(":")  # 640:nut
        changed = write_if_changed(path, sys.stdin.buffer.read(), int(mode, 8), allowed, group)
    except (PermissionError, KeyError) as exc:
        print(exc, file=sys.stderr)
        sys.exit(3)
    except FileNotFoundError as exc:
        print(exc, file=sys.stderr)
        sys.exit(4)
    except (OSError, SealFailed) as exc:  # the kernel refused the value (EINVAL) or the flag
        print(exc, file=sys.stderr)
        sys.exit(5)
    print("changed" if changed else "unchanged")


if __name__ == "__main__":
    _main()
