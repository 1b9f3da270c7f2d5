"""A dataset's folders as ACLs see them, read live from the host (ACLs are not in the inventory: a dataset may hold
millions of files): the folder named (checked against the inventory and as a path), its ACL, its subfolders, what a
user may do there, and an account named by a person resolved on the host."""

from dataclasses import dataclass

from django.core.exceptions import ValidationError

from appliance.checks import host_said
from appliance.connect import transport_for
from hostlib import acl
from hostlib.errors import HostError
from permissions.choices import is_system_mount
from pools import selectors as pools


@dataclass
class Place:
    """A folder of a mounted dataset: its mount point and the components below it."""

    host: object
    dataset: str
    root: str
    parts: list[str]
    properties: dict

    @property
    def path(self) -> str:
        return "/".join(self.parts)

    @property
    def full(self) -> str:
        return "/".join([self.root.rstrip("/"), *self.parts]) or "/"

    @property
    def name(self) -> str:
        """What a risky change asks to be typed: the folder's name (the dataset's for its top folder)."""
        return self.parts[-1] if self.parts else self.dataset

    @property
    def acltype(self) -> str:
        return (self.properties.get("acltype") or {}).get("value", "")

    @property
    def xattr(self) -> str:
        return (self.properties.get("xattr") or {}).get("value", "")


def place(*, host, dataset: str, path: str = "") -> Place:
    """The folder, checked against the inventory (a mounted filesystem of this host) and as a path (no '..', no
    control characters); errors name the field."""
    row = pools.mounted_filesystem(host=host, name=dataset) if host else None
    if row is None:
        raise ValidationError({"dataset": f"No mounted filesystem {dataset[:100]!r} on this host."})
    if is_system_mount(row.mountpoint):
        raise ValidationError(
            {"dataset": f"{row.name} holds the system ({row.mountpoint}): its folders are not edited here."}
        )
    problems: dict[str, str] = {}
    parts = acl.check_relative(path, problems)
    if problems:
        raise ValidationError(problems)
    return Place(host=host, dataset=row.name, root=row.mountpoint, parts=parts, properties=row.properties)


def folder_read(*, where: Place) -> acl.Folder:
    try:
        return acl.read(transport_for(where.host, read_only=True), where.root, where.parts)
    except HostError as exc:
        raise host_said(exc) from None


def folder_children(*, where: Place, limit: int = 500) -> dict:
    try:
        return acl.children(transport_for(where.host, read_only=True), where.root, where.parts, limit)
    except HostError as exc:
        raise host_said(exc) from None


def missing_account(kind: str, name: str, host_name: str) -> str:
    """The refusal for a user or group (or an id) the host does not know."""
    said = "No account has the id" if name.isascii() and name.isdigit() else f"No {kind} named"
    return f"{said} {name!r} on {host_name}."


# --- what a user may do ------------------------------------------------------------------------------------------


def effective_for(*, where: Place, folder: acl.Folder, username: str) -> dict:
    """What username may do in the folder and why: their rights there (read, write, enter) and, for each folder on
    the way from /, whether they may pass (x); the first that stops them is named."""
    problems: dict[str, str] = {}
    acl.check_name(username, "user", problems)
    if problems:
        raise ValidationError(problems)
    try:
        found = acl.account(transport_for(where.host, read_only=True), username)
    except HostError as exc:
        raise host_said(exc, "user") from None
    if found is None:
        raise ValidationError({"user": f"No user {username!r} on {where.host.name}."})
    uid, gids = found["uid"], set(found["gids"])
    if uid == 0:
        everything = {"wx": True, "rw": True}
        return {
            "account": found,
            "root": True,
            "perms": 7,
            "together": everything,
            "why": "root may do anything",
            "way": [],
        }
    way, blocked = [], None
    for step in folder.chain[:-1]:
        verdict = acl.effective(step["access"], step["uid"], step["gid"], uid, gids, folder.names)
        passes = bool(verdict.perms & 1)
        way.append({"path": step["path"], "passes": passes, "why": verdict.why})
        if not passes and blocked is None:
            blocked = step["path"]
    names = {**folder.names, ("u", folder.uid): folder.owner, ("g", folder.gid): folder.group}
    here = acl.effective(folder.access, folder.uid, folder.gid, uid, gids, names)
    perms = 0 if blocked else here.perms
    why = f"{blocked} does not let them pass (no x for them there)" if blocked else here.why
    return {
        "account": found,
        "root": False,
        "perms": perms,
        "together": {k: bool(v and not blocked) for k, v in here.together.items()},  # create in it: w and x at once
        "why": why,
        "perms_here": here.perms,  # what the folder's own ACL gives, were the way open
        "why_here": here.why,
        "way": way,
    }
