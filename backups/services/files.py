"""The backup files on this machine. Made ones live in DATA_DIR/backups (root's: the web only reads them, to
download); uploaded ones in DATA_DIR/uploads (the web writes them there). A row's name is used only if it is a name
Tarn gives (its pattern, for its origin), and only inside its folder, opened without following a link: reading and
removing go through that folder's descriptor. So a row named ../vault/identity.age reaches nothing (retention and
the upload prune run as root), and a link or a second hard link put in a folder is refused, not followed."""

import os
import re
import secrets
import stat
from contextlib import contextmanager
from pathlib import Path

from django.core.exceptions import ValidationError
from django.utils import timezone

from appliance import datadir
from backups.choices import SUFFIX, Origin
from backups.models import Backup
from hostlib.backups import NAME as MADE

UPLOADED = re.compile(r"uploaded-[0-9]{8}-[0-9]{6}-[0-9a-f]{6}\.tarnbackup")
MAX_UPLOAD = 2 << 30  # bytes: a backup larger than this is not one Tarn made of a NAS's configuration
OPEN_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def folder() -> Path:
    """DATA_DIR/backups (made by the first backup, 2750: the web's group reads, to download), checked."""
    path = datadir.data_dir() / "backups"
    if not os.path.lexists(path):
        path.mkdir(mode=0o750)
    return datadir.key_folder("backups")


def uploads() -> Path:
    """DATA_DIR/uploads (the web writes there; `make run` makes it), checked to be root's real folder."""
    path = datadir.data_dir() / datadir.UPLOADS
    if not os.path.lexists(path):
        path.mkdir(mode=0o770)
    return datadir.web_folder(datadir.UPLOADS)


def new_name(prefix: str) -> str:
    return f"{prefix}-{timezone.now():%Y%m%d-%H%M%S}-{secrets.token_hex(3)}{SUFFIX}"


def is_tarns(name: str, origin: str) -> bool:
    """Whether name is one Tarn gives a backup of this origin (uploaded ones have a pattern of their own)."""
    return bool((UPLOADED if origin == Origin.UPLOADED else MADE).fullmatch(name))


def _place(backup: Backup) -> tuple[Path, str]:
    if not is_tarns(backup.name, backup.origin):
        raise ValidationError({"backup": f"Refused: {backup.name[:80]!r} is not a name Tarn gives a backup."})
    return (uploads() if backup.origin == Origin.UPLOADED else folder()), backup.name


def path_of(backup: Backup) -> Path:
    """Where the backup's file is (to name it; reading goes through read() or opened())."""
    where, name = _place(backup)
    return where / name


@contextmanager
def _folder_fd(where: Path):
    fd = os.open(where, OPEN_DIR)
    try:
        yield fd
    finally:
        os.close(fd)


def open_file(backup: Backup):
    """The backup's file, open for reading (the caller closes it): a plain file with one link, in its folder, never
    through a link; one made here must also be root's and written by root alone. ValidationError says what is wrong."""
    where, name = _place(backup)
    with _folder_fd(where) as dir_fd:
        try:
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
        except FileNotFoundError:
            raise ValidationError({"backup": f"The file of {name} is gone from {where}."}) from None
        except OSError as exc:  # ELOOP: a link put in its place
            raise ValidationError(
                {"backup": f"Refused: {name} in {where} is not a plain file ({exc.strerror})."}
            ) from None
    fh = os.fdopen(fd, "rb")
    st = os.fstat(fd)
    problem = ""
    if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
        problem = f"Refused: {name} is not a plain file with one name."
    elif st.st_size > MAX_UPLOAD:
        problem = f"Refused: {name} is larger than a Tarn backup can be."
    elif backup.origin != Origin.UPLOADED and (st.st_uid not in (0, os.geteuid()) or st.st_mode & 0o022):
        problem = f"Refused: {name} was not written by Tarn's workers alone."
    if problem:
        fh.close()
        raise ValidationError({"backup": problem})
    return fh


def read(backup: Backup) -> bytes:
    with open_file(backup) as fh:
        return fh.read(MAX_UPLOAD + 1)


def write(name: str, data: bytes, mode: int = 0o640) -> None:
    """A made backup, atomically: a temporary file beside it (never through a link), then renamed."""
    with _folder_fd(folder()) as dir_fd:
        temporary = f".tmp-{secrets.token_hex(8)}"
        fd = os.open(
            temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=dir_fd
        )
        try:
            with os.fdopen(fd, "wb") as fh:
                os.fchmod(fh.fileno(), mode)
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(temporary, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except BaseException:
            _unlink(dir_fd, temporary)
            raise


def upload(name: str, chunks, *, limit: int) -> tuple[int, bytes]:
    """Write an upload into uploads/ (a new file, never through a link); returns its size and its first bytes.
    Past limit bytes it stops, removes what it wrote and raises ValidationError."""
    total, head = 0, b""
    with _folder_fd(uploads()) as dir_fd:
        fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o640, dir_fd=dir_fd)
        try:
            with os.fdopen(fd, "wb") as fh:
                for chunk in chunks:
                    total += len(chunk)
                    if total > limit:
                        raise ValidationError({"file": f"The file is larger than {size(limit)}: not a Tarn backup."})
                    head = head or chunk[:64]
                    fh.write(chunk)
        except BaseException:
            _unlink(dir_fd, name)
            raise
    return total, head


def remove(backup: Backup) -> bool:
    """Delete the backup's file if its name is one Tarn gives (else nothing is touched); True if one was removed."""
    if not is_tarns(backup.name, backup.origin):
        return False
    where = uploads() if backup.origin == Origin.UPLOADED else folder()
    with _folder_fd(where) as dir_fd:
        return _unlink(dir_fd, backup.name)


def remove_upload(name: str) -> bool:
    """An upload no row knows (after a restore), by its name."""
    if not UPLOADED.fullmatch(name):
        return False
    with _folder_fd(uploads()) as dir_fd:
        return _unlink(dir_fd, name)


def _unlink(dir_fd: int, name: str) -> bool:
    try:
        os.unlink(name, dir_fd=dir_fd)  # a link is removed itself, never what it points to
        return True
    except FileNotFoundError:
        return False


def listed() -> tuple[list[str], list[str]]:
    """(made backups in backups/, uploads in uploads/): the names Tarn gives, in each folder."""
    made = sorted(n for n in os.listdir(folder()) if MADE.fullmatch(n))
    uploaded = sorted(n for n in os.listdir(uploads()) if UPLOADED.fullmatch(n))
    return made, uploaded


def size(n: int) -> str:
    return f"{n / (1 << 20):.1f} MiB" if n >= 1 << 20 else f"{max(1, n // 1024)} KiB"
