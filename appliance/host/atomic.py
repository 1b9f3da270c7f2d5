"""write_if_changed: the one atomic file write, run in-process locally and sent verbatim over SSH.

This module must stay self-contained (standard library only, no other imports from Tarn):
the SSH transport sends its source to the remote python3.
"""

import os
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


def _main():
    """Remote entry: argv = path, octal mode, allowed dirs...; data on stdin; prints the outcome."""
    path, mode, *allowed = sys.argv[1:]
    try:
        changed = write_if_changed(path, sys.stdin.buffer.read(), int(mode, 8), allowed)
    except PermissionError as exc:
        print(exc, file=sys.stderr)
        sys.exit(3)
    print("changed" if changed else "unchanged")


if __name__ == "__main__":
    _main()
