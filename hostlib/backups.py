"""A NAS keeping Tarn's configuration backups: one root-only folder, the newest N files kept. The files come sealed
(backups.archive); the NAS never holds anything that opens them."""

import re

from hostlib import posix
from hostlib.errors import HostError
from hostlib.runner import Transport

FOLDER = "/var/lib/tarn-backups"
NAME = re.compile(r"tarn-[0-9]{8}-[0-9]{6}-[0-9a-f]{6}\.tarnbackup")


def keep(t: Transport, folder: str, name: str, data: bytes, *, keep: int, suffix: str) -> list[str]:
    """Write the backup (0600, atomically), then remove the oldest of Tarn's backups beyond keep; returns them."""
    if not NAME.fullmatch(name) or not name.endswith(suffix):
        raise HostError(f"Refused: {name!r} is not a name Tarn gives a backup.")
    posix.private_dir(t, folder)
    t.write_file(f"{folder}/{name}", data, mode=0o600, timeout=600)
    return prune(t, folder, keep=keep)


def listed(t: Transport, folder: str) -> list[str]:
    """Tarn's backups in the folder, oldest first (their names sort by time)."""
    argv = ["find", "-P", folder, "-mindepth", "1", "-maxdepth", "1", "-type", "f", "-printf", "%f\\n"]
    out = t.run(argv, timeout=30, check=False).stdout
    return sorted(line for line in out.splitlines() if NAME.fullmatch(line))


def prune(t: Transport, folder: str, *, keep: int) -> list[str]:
    names = listed(t, folder)
    gone = names[: max(0, len(names) - keep)]
    for name in gone:
        t.remove_file(f"{folder}/{name}")
    return gone
