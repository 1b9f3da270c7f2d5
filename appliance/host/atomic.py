"""The host's small programs, run in-process locally and sent verbatim over SSH: write_if_changed (the one
atomic file write) and folder (owner, group and mode of a folder reached without following any symlink).

This module must stay self-contained (standard library only, no other imports from Tarn):
the SSH transport sends its source to the remote python3.
"""

import grp
import os
import pwd
import sys
import tempfile


def write_if_changed(path, data, mode, allowed_dirs):
    """Write bytes to path atomically unless it already holds them; returns True if it changed.

    Refuses symlinks and paths outside allowed_dirs (directories, or exact files). Temp file in the same directory, fsync,
    os.replace, then fsync the directory, so a crash leaves either the old or the new file.
    """
    path = os.path.abspath(path)
    parent = os.path.dirname(path)
    if path not in allowed_dirs and not any(
        parent == d.rstrip("/") or parent.startswith(d.rstrip("/") + "/") for d in allowed_dirs
    ):
        raise PermissionError(f"refusing to write {path}: outside the allowed directories")
    if os.path.realpath(parent) != parent:
        raise PermissionError(f"refusing to write {path}: its directory is behind a symlink")
    if os.path.islink(path):
        raise PermissionError(f"refusing to write {path}: it is a symlink")
    try:
        with open(path, "rb") as fh:
            if fh.read() == data and (os.stat(path).st_mode & 0o7777) == mode:
                return False
    except FileNotFoundError:
        pass
    os.makedirs(parent, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tarn-", dir=parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
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


def folder(path, owner, group, mode, create=False):
    """Set a folder's owner, group and mode as root on a tree users can write, so never through a link: every
    component from / is opened relative to its parent with O_NOFOLLOW, and the change is made on the open
    descriptor (fchown, fchmod). create: make the last component first if it is missing (mode 0700 until set).
    Returns 'owner:group mode' before and after, as `stat -c '%U:%G %a'` would print them."""
    uid, gid = pwd.getpwnam(owner).pw_uid, grp.getgrnam(group).gr_gid
    parts = [part for part in path.split("/") if part]
    if not path.startswith("/") or not parts or any(part in (".", "..") for part in parts):
        raise PermissionError(f"refusing {path}: not an absolute path of plain folders")
    fd = os.open("/", os.O_RDONLY | os.O_DIRECTORY)
    try:
        for index, part in enumerate(parts):
            if create and index == len(parts) - 1:
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
        before = _owner(os.fstat(fd))
        os.fchown(fd, uid, gid)
        os.fchmod(fd, mode)
        return f"{before} → {_owner(os.fstat(fd))}"
    finally:
        os.close(fd)


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
        path, mode, *allowed = sys.argv[1:]
        changed = write_if_changed(path, sys.stdin.buffer.read(), int(mode, 8), allowed)
    except (PermissionError, KeyError) as exc:
        print(exc, file=sys.stderr)
        sys.exit(3)
    print("changed" if changed else "unchanged")


if __name__ == "__main__":
    _main()
