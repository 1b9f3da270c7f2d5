"""Local accounts' folders: owner, group and mode of a share's root folder and the private preset's per-user
folders (install -d; not recursive: files keep theirs)."""

import re

from appliance.host.configfiles import InvalidShare, check_path
from appliance.host.runner import Transport

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


def folder_argv(path: str, owner: str, group: str, mode: str) -> list[str]:
    """Set a share's root folder owner, group and mode (not recursive: files keep theirs)."""
    problems: dict[str, str] = {}
    check_path(path, problems)
    for key, value in (("owner", owner), ("group", group)):
        if not ACCOUNT.fullmatch(value):  # the same rule as the local accounts Tarn makes
            problems[key] = "A local account name: lower-case letters, digits, _ and -, at most 32."
    if mode not in FOLDER_MODES:
        problems["mode"] = f"One of {', '.join(FOLDER_MODES)}."
    if problems:
        raise InvalidShare(problems)
    return ["install", "-d", "-m", mode, "-o", owner, "-g", group, "--", path]


def group_folder_argv(path: str) -> list[str]:
    """A share's root folder that every Samba user may write (setgid: new files stay in the shared group)."""
    return folder_argv(path, "root", SHARED_GROUP, "2775")


def folder_owner(t: Transport, path: str) -> str:
    """`owner:group mode` of a folder, as stat prints it (e.g. `root:users 2775`)."""
    return t.run(["stat", "-c", "%U:%G %a", "--", path], timeout=30).stdout.strip()


def user_dir(t: Transport, base: str, name: str) -> None:
    """The private preset's per-user directory: <share path>/<user>, owned by the user, mode 0700."""
    problems: dict[str, str] = {}
    if not ACCOUNT.fullmatch(name):
        problems["username"] = "A local account name: lower-case letters, digits, _ and -, at most 32."
    check_path(base, problems)
    if problems:
        raise InvalidShare(problems)
    t.run(["install", "-d", "-m", "0700", "-o", name, "-g", name, "--", f"{base}/{name}"], mutating=True)
