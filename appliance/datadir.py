"""Tarn's data dir: which folder holds what, who may change what in it, and the check made before a key is used.

    DATA_DIR/        root:tarn 2750  the web enters it and reads; only root adds, removes or renames entries
      db/            root:tarn 2770  SQLite: the web writes the database (and its -wal, -shm), so it needs the folder
      uploads/       root:tarn 2770  backup files uploaded through the web, until restored or a day old
      sock/          root:tarn-sock 2770  web.sock: the web (gunicorn) listens, the HTTPS front's workers send to it
      front/         root:tarn-front 0750  the front's temporary files (nginx makes its folders there, its workers'):
                                     the web can neither read what passes through the front nor plant a link there
      secret_key     root:tarn 0640
      static/        root:tarn 2750
      vault/         root:tarn 0710  identity.age 0600, backup.key 0600, recipient.txt 0640
      ssh/           root:tarn 0710  id_ed25519 0600, id_ed25519.pub 0640
      tls/           root:tarn 0710  key.pem 0600, cert.pem 0640, nginx.conf 0640, nginx/ (the front: appliance.tls)
      backups/       root:tarn 2750  the backups made here, 0640 (the web downloads them)

Why: a folder the web may write is a folder whose entries it may rename. The data dir was 2770, so the web's user
could move vault/ aside and put its own in its place, and the root workers would then seal keys to a recipient it
chose, or log in to a NAS with a key it planted. Now only db/, uploads/ and sock/ are the web's; before a key in a key folder
is used, the folder and the data dir above it are checked (owned by root, or by this process's own user when Tarn
does not run as root; writable by their owner alone; not a link), and so is the key file. `make run` sets this
layout (manage.py tarn_layout), moving an older install's files once."""

import grp
import os
import sqlite3
import stat
from pathlib import Path

from django.conf import settings

from hostlib.errors import HostError

DB = "db"
UPLOADS = "uploads"
SOCK = "sock"  # the web's socket (the HTTPS front sends requests to it)
FRONT = "front"  # the HTTPS front's temporary files
DATABASE_FILES = ("tarn.sqlite3", "tarn.sqlite3-wal", "tarn.sqlite3-shm")
KEY_FOLDERS = {"vault": 0o710, "ssh": 0o710, "backups": 0o2750, "tls": 0o710}
PRIVATE_FILES = {
    "vault": ("identity.age", "backup.key"),
    "ssh": ("id_ed25519",),
    "tls": ("key.pem", "request-key.pem", "acme-account.pem"),
}
PUBLIC_FILES = {
    "vault": ("recipient.txt",),
    "ssh": ("id_ed25519.pub",),
    "tls": ("cert.pem", "nginx.conf", "front.json", "request.csr"),
}
FIX = "run `make run` as root (it sets the data dir's layout), or find out who changed it"


class LayoutError(HostError):
    """A key folder or file of this machine is not safe to use (another owner, writable by others, a link): nothing
    was read. Its text is shown to the admin, as a host's errors are."""


def _owners() -> set[int]:
    return {0, os.geteuid()}


def _problem(st: os.stat_result, *, folder: bool, private: bool) -> str:
    """What is wrong with a key folder or file (by its lstat), or ""."""
    if stat.S_ISLNK(st.st_mode):
        return "a link"
    if folder != stat.S_ISDIR(st.st_mode) or not (folder or stat.S_ISREG(st.st_mode)):
        return "not a folder" if folder else "not a plain file"
    if st.st_uid not in _owners():
        return f"owned by uid {st.st_uid}, not root"
    if st.st_mode & 0o022:
        return f"writable by others than its owner (mode {stat.S_IMODE(st.st_mode):04o})"
    if private and st.st_mode & 0o077:
        return f"readable by others than its owner (mode {stat.S_IMODE(st.st_mode):04o})"
    return ""


def check(path: Path, *, folder: bool = False, private: bool = False) -> Path:
    """path, once it is found safe to use as a key folder or file (LayoutError says why not)."""
    problem = _problem(os.lstat(path), folder=folder, private=private)
    if problem:
        raise LayoutError(
            f"Refused: {path} is {problem}. A key {'folder' if folder else 'file'} must be root's alone; {FIX}."
        )
    return path


def data_dir() -> Path:
    """The data dir, checked: the folder the key folders live in (it may itself be a link an admin made)."""
    path = settings.DATA_DIR
    path.mkdir(mode=0o750, parents=True, exist_ok=True)
    st = os.stat(path)
    problem = "" if stat.S_ISDIR(st.st_mode) else "not a folder"
    if not problem and st.st_uid not in _owners():
        problem = f"owned by uid {st.st_uid}, not root"
    if not problem and st.st_mode & 0o022:
        problem = (
            f"writable by others than its owner (mode {stat.S_IMODE(st.st_mode):04o}): they could swap a key folder"
        )
    if problem:
        raise LayoutError(f"Refused: the data dir {path} is {problem}; {FIX}.")
    return path


def key_folder(name: str) -> Path:
    """DATA_DIR/name, checked when it exists (whoever makes it makes it with its mode: see KEY_FOLDERS)."""
    path = data_dir() / name
    if os.path.lexists(path):
        check(path, folder=True)
    return path


def key_file(path: Path, *, private: bool = True) -> Path:
    """A key file checked before it is read (its folder was checked by key_folder)."""
    return check(path, private=private)


def write_file(path: Path, data: bytes, mode: int) -> None:
    """A key folder's file (a key, a certificate, a state file) with data, atomically (a new file renamed over it,
    never through a link), made with its final mode whatever the umask; one the web may read (0640) gets its
    folder's group."""
    tmp = path.with_name(f".{path.name}.new")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    with os.fdopen(fd, "wb") as f:
        if mode & 0o040:
            os.fchown(f.fileno(), -1, os.stat(path.parent).st_gid)
        os.fchmod(f.fileno(), mode)
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def web_folder(name: str) -> Path:
    """db/ or uploads/: the web writes there, so only that it is a real folder of root's (or of this user) is checked;
    what root reads from it is checked file by file."""
    path = data_dir() / name
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode) or st.st_uid not in _owners():
        raise LayoutError(f"Refused: {path} is not a folder of root's; {FIX}.")
    return path


# --- setting the layout (manage.py tarn_layout, as root before anything else runs) --------------------------------


def layout(group: str = "", *, sock_group: str = "", front_group: str = "") -> list[str]:
    """Make the data dir's folders, give each its owner and mode, and move an older install's files (the database
    from the data dir to db/, uploads from backups/ to uploads/) once. Returns what it changed, for the log.
    group: the web's group (as root); without it (or not root) only the modes are set. sock_group, front_group: the
    groups of sock/ (the web and the front's workers) and front/ (the front's workers), the same way."""
    done: list[str] = []
    root = os.geteuid() == 0
    gid = _gid(group) if group and root else -1
    data = settings.DATA_DIR
    data.mkdir(parents=True, exist_ok=True)
    _fix(data, 0o2750, gid, done, take=root)
    for name in (DB, UPLOADS):
        (data / name).mkdir(exist_ok=True)
        _fix(data / name, 0o2770, gid, done, take=root)
    for name, mode, of in ((SOCK, 0o2770, sock_group), (FRONT, 0o750, front_group)):
        (data / name).mkdir(exist_ok=True)
        _fix(data / name, mode, _gid(of) if of and root else -1, done, take=root)
    _move_database(data, done)
    for name in DATABASE_FILES:
        if (data / DB / name).exists():
            _fix(data / DB / name, 0o660, gid, done)
    if (data / "backups").is_dir():
        for path in sorted((data / "backups").glob("uploaded-*")):
            os.rename(path, data / UPLOADS / path.name)
            done.append(f"moved {path.name} to {UPLOADS}/")
    if (data / "secret_key").exists():
        _fix(data / "secret_key", 0o640, gid, done, owned=True)
    for name, mode in KEY_FOLDERS.items():
        folder = data / name
        if not os.path.lexists(folder):
            continue
        _fix(folder, mode, gid, done, owned=True)
        for file in PRIVATE_FILES.get(name, ()):
            if os.path.lexists(folder / file):
                _fix(folder / file, 0o600, -1, done, owned=True)
        for file in PUBLIC_FILES.get(name, ()):
            if os.path.lexists(folder / file):
                _fix(folder / file, 0o640, gid, done, owned=True)
    if os.path.lexists(data / "ssh" / "run"):
        _fix(data / "ssh" / "run", 0o700, -1, done, owned=True)
    for path in sorted((data / "backups").glob("tarn-*")) if (data / "backups").is_dir() else ():
        if os.lstat(path).st_uid in _owners():
            _fix(path, 0o640, gid, done)
        else:
            done.append(
                f"left {path.name} in backups/: not made by Tarn's workers (uid {os.lstat(path).st_uid}), so Tarn refuses it"
            )
    static = data / "static"
    if static.is_dir():
        for path in [static, *static.rglob("*")]:
            if not path.is_symlink():
                _fix(path, 0o2750 if path.is_dir() else 0o640, gid, done)
    return done


def _gid(group: str) -> int:
    try:
        return grp.getgrnam(group).gr_gid
    except KeyError:
        raise LayoutError(f"There is no group {group} (the web's): scripts/web.sh prepare makes it.") from None


def _fix(path: Path, mode: int, gid: int, done: list[str], *, take: bool = False, owned: bool = False) -> None:
    """Set path's mode (and group, and root as its owner with take) through a descriptor opened without following
    a link. owned: a key folder or file must already be root's (or this user's); one that is not was not made by
    Tarn and is refused, not adopted."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        if owned and st.st_uid not in _owners():
            raise LayoutError(
                f"Refused: {path} is owned by uid {st.st_uid}, not root: Tarn did not make it. Look at it, move it "
                "away, and run `make run` again."
            )
        uid = 0 if take and st.st_uid != 0 else -1
        if uid != -1 or (gid != -1 and st.st_gid != gid):
            os.fchown(fd, uid, gid)
        if stat.S_IMODE(os.fstat(fd).st_mode) != mode:
            os.fchmod(fd, mode)
            done.append(f"{path.relative_to(settings.DATA_DIR.parent)}: mode {mode:04o}")
    finally:
        os.close(fd)


def _move_database(data: Path, done: list[str]) -> None:
    """The database of an install older than db/: checkpointed (its -wal emptied into it), then moved with its
    companions. Both present is a question for the admin, not something to guess."""
    old, new = data / DATABASE_FILES[0], data / DB / DATABASE_FILES[0]
    if not old.exists():
        return
    if new.exists():
        raise LayoutError(
            f"Refused: there are two databases, {old} (an older layout) and {new}. Keep the one in use (the older one, "
            f"unless you restored or set up Tarn again since), move the other away, and run `make run` again."
        )
    db = sqlite3.connect(old)
    try:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        db.close()
    for name in DATABASE_FILES:
        if (data / name).exists():
            os.rename(data / name, data / DB / name)
    done.append(f"moved the database into {DB}/")
