"""Local accounts' folders: owner, group and mode of a share's root folder and the private preset's per-user
folders (install -d; not recursive: files keep theirs)."""

import re

from hostlib.configfiles import InvalidShare, check_path
from hostlib.errors import HostError
from hostlib.runner import Transport

ACCOUNT = re.compile(r"^[a-z_][a-z0-9_-]{0,31}$")  # the local account names Tarn makes and accepts as owners
SHARED_GROUP = "users"  # Debian's group 100: every Samba user Tarn makes is in it; new share folders are 2775 to it


# Modes offered for a share's root folder: what each means for Samba users (who reach files as themselves).
FOLDER_MODES = {
    "2775": "group writes, others read; new files keep the group (setgid)",
    "2770": "group writes, others nothing; new files keep the group (setgid)",
    "0755": "owner writes, everyone else reads",
    "0750": "owner writes, group reads, others nothing",
    "0700": "owner only",
}


def check_folder(path: str, owner: str, group: str, mode: str) -> None:
    """A share's root folder change, checked before anything runs: a clean path, account names, a listed mode."""
    problems: dict[str, str] = {}
    check_path(path, problems)
    for key, value in (("owner", owner), ("group", group)):
        if not ACCOUNT.fullmatch(value):  # the same rule as the local accounts Tarn makes
            problems[key] = "A local account name: lower-case letters, digits, _ and -, at most 32."
    if mode not in FOLDER_MODES:
        problems["mode"] = f"One of {', '.join(FOLDER_MODES)}."
    if problems:
        raise InvalidShare(problems)


def set_folder(t: Transport, path: str, owner: str, group: str, mode: str) -> str:
    """Owner, group and mode of a share's root folder (not recursive: files keep theirs), never through a
    symlink; returns 'before → after'."""
    check_folder(path, owner, group, mode)
    return t.folder(path, owner, group, int(mode, 8))


def shared_folder(t: Transport, path: str) -> str:
    """A share's root folder that every Samba user may write (setgid: new files stay in the shared group)."""
    return set_folder(t, path, "root", SHARED_GROUP, "2775")


def is_mountpoint(t: Transport, path: str) -> bool:
    """Whether path is a mounted filesystem now (a locked dataset leaves only an empty folder of its parent's); a
    link there is not (--nofollow: a link planted where a mount folder was must not pass for its target)."""
    problems: dict[str, str] = {}
    check_path(path, problems)
    if problems:
        raise InvalidShare(problems)
    return t.run(["mountpoint", "-q", "--nofollow", "--", path], check=False, timeout=10).returncode == 0


def user_dir(t: Transport, base: str, name: str) -> None:
    """The private preset's per-user folder <share path>/<user>, owned by the user, 0700. Users can write the
    share, so a link planted where the folder goes is refused, never followed (it would chown its target)."""
    problems: dict[str, str] = {}
    if not ACCOUNT.fullmatch(name):
        problems["username"] = "A local account name: lower-case letters, digits, _ and -, at most 32."
    check_path(base, problems)
    if problems:
        raise InvalidShare(problems)
    t.folder(f"{base}/{name}", name, name, 0o700, create=True)


def cat(t: Transport, *paths: str, timeout: float = 30) -> str:
    """The files' contents, one after another, in one command ('' for those missing)."""
    return t.run(["cat", "--", *paths], check=False, timeout=timeout).stdout


def private_dir(t: Transport, path: str) -> None:
    """A root-only directory (0700), made with its parents where missing."""
    t.run(["install", "-d", "-m", "0700", "--", path], mutating=True)


def only_regular_files(t: Transport, directory: str) -> None:
    """The tripwire before a measured pass: the scratch folder holds fio's regular files only. In a share, anyone who
    may write it could have swapped a file for a link or a device node between the layout and the pass: refuse, touch
    nothing (the sandbox and the mount's nosymfollow stop it anyway; this says so)."""
    argv = ["find", "-P", directory, "-mindepth", "1", "!", "-type", "f", "!", "-type", "d", "-print", "-quit"]
    found = t.run(argv, timeout=60).stdout.strip()
    if found:
        raise HostError(f"Refused: {found} in the scratch folder is not a regular file (planted by someone?).")
