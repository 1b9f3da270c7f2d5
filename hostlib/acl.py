"""POSIX ACLs of a dataset's folders: what an ACL is (entries, the kernel's xattr form, getfacl's text), what a user
may do under one (effective permissions and why), and the host calls that read, list and change folders through
hostlib.acl_helper (every component opened with O_NOFOLLOW, never a path followed).

OpenZFS on Linux has POSIX ACLs only (acltype=posix; NFSv4 ACLs are not merged: openzfs#16967). Tarn writes the
kernel's own xattr (system.posix_acl_access / _default) on an open descriptor, as setfacl does through libacl; the
mask is always recomputed as the union of the group class, as setfacl does by default."""

import json
import re
import struct
from dataclasses import dataclass, field

from hostlib import acl_helper, systemd
from hostlib.configfiles import HELPER_DIR, install_sources
from hostlib.errors import CommandFailed, HostError, PathNotAllowed, error_for
from hostlib.runner import Transport, python, source_of

# linux/posix_acl_xattr.h
VERSION = 2
USER_OBJ, USER, GROUP_OBJ, GROUP, MASK, OTHER = 0x01, 0x02, 0x04, 0x08, 0x10, 0x20
UNDEFINED_ID = 0xFFFFFFFF
TAG_NAMES = {USER_OBJ: "user", USER: "user", GROUP_OBJ: "group", GROUP: "group", MASK: "mask", OTHER: "other"}
# The kernel's limit: an xattr value is at most XATTR_SIZE_MAX (64 KiB), 4 bytes of header and 8 per entry. OpenZFS
# keeps larger ACLs out of the SA and in a directory xattr, so this, not xattr=sa, is the filesystem's limit.
XATTR_SIZE_MAX = 65536
MAX_ENTRIES = (XATTR_SIZE_MAX - 4) // 8  # 8191, the owner, group, mask and other entries included
# A user or group as the admin types it: a local name, a domain's (DOMAIN\name, names with spaces such as
# "Domain Users"), or a numeric id. Never a leading '-' or space, no ',' ':' (getfacl's separators), no control
# characters or newline.
NAME = re.compile(r"[\w\\$@.][\w\\$@. '-]{0,255}")
PERMS = re.compile(r"[r-][w-][x-]")


class InvalidAcl(ValueError):
    """Field → problem for an ACL that may not be written."""

    def __init__(self, problems: dict[str, str]):
        self.problems = problems
        super().__init__("; ".join(f"{k}: {v}" for k, v in problems.items()))


@dataclass(frozen=True, order=True)
class Entry:
    tag: int
    id: int = UNDEFINED_ID  # a uid or gid for USER and GROUP entries
    perms: int = 0  # r=4 w=2 x=1

    @property
    def named(self) -> bool:
        return self.tag in (USER, GROUP)


def perms_text(perms: int) -> str:
    return "".join(c if perms & b else "-" for c, b in (("r", 4), ("w", 2), ("x", 1)))


def perms_of(text: str) -> int:
    if not PERMS.fullmatch(text):
        raise ValueError(f"permissions are three of r, w, x or -: {text[:10]!r}")
    return sum(b for c, b in zip(text, (4, 2, 1), strict=True) if c != "-")


@dataclass
class Acl:
    """One ACL (access or default): its entries in the kernel's order (owner, users by id, group, groups by id,
    mask, other)."""

    entries: list[Entry] = field(default_factory=list)

    @classmethod
    def from_mode(cls, mode: int) -> "Acl":
        """The three entries a plain mode stands for (a file without an ACL xattr)."""
        return cls(
            [
                Entry(USER_OBJ, perms=(mode >> 6) & 7),
                Entry(GROUP_OBJ, perms=(mode >> 3) & 7),
                Entry(OTHER, perms=mode & 7),
            ]
        )

    @classmethod
    def decode(cls, blob: bytes) -> "Acl":
        if len(blob) < 4 or (len(blob) - 4) % 8 or struct.unpack_from("<I", blob)[0] != VERSION:
            raise ValueError("not a POSIX ACL xattr")
        return cls([Entry(t, i, p) for t, p, i in struct.iter_unpack("<HHI", blob[4:])])

    def encode(self) -> bytes:
        return struct.pack("<I", VERSION) + b"".join(struct.pack("<HHI", e.tag, e.perms, e.id) for e in self.entries)

    def get(self, tag: int) -> Entry | None:
        return next((e for e in self.entries if e.tag == tag), None)

    @property
    def named(self) -> list[Entry]:
        return [e for e in self.entries if e.named]

    @property
    def minimal(self) -> bool:
        """Only owner, group and other: the mode says it all (the kernel then keeps no xattr)."""
        return not self.named and self.get(MASK) is None

    @property
    def mode_bits(self) -> int:
        """The rwx bits of the mode this ACL gives a file (the group bits are the mask's when there is one)."""
        group = self.get(MASK) or self.get(GROUP_OBJ)
        return ((self.get(USER_OBJ).perms << 6) | (group.perms << 3) | self.get(OTHER).perms) if group else 0

    def for_file(self, executable: bool) -> "Acl":
        """The ACL a file gets when a folder's is applied to everything inside: x only where the file had some
        already (setfacl's X), so documents do not become programs."""
        if executable:
            return self
        return Acl([Entry(e.tag, e.id, e.perms & ~1) for e in self.entries])


def build(owner: int, group: int, other: int, users: dict[int, int], groups: dict[int, int]) -> Acl:
    """An ACL from its parts (perms by uid and by gid), sorted as the kernel wants, the mask the union of the group
    class when there is any named entry (as setfacl computes it)."""
    entries = [Entry(USER_OBJ, perms=owner)]
    entries += [Entry(USER, uid, p) for uid, p in sorted(users.items())]
    entries.append(Entry(GROUP_OBJ, perms=group))
    entries += [Entry(GROUP, gid, p) for gid, p in sorted(groups.items())]
    if users or groups:
        mask = group
        for p in [*users.values(), *groups.values()]:
            mask |= p
        entries.append(Entry(MASK, perms=mask))
    entries.append(Entry(OTHER, perms=other))
    if len(entries) > MAX_ENTRIES:
        raise InvalidAcl({"entries": f"At most {MAX_ENTRIES} entries (the kernel's 64 KiB limit for one ACL)."})
    return Acl(entries)


def check_name(value: str, key: str, problems: dict) -> None:
    if not isinstance(value, str) or value in ("-", "--") or not NAME.fullmatch(value) or value != value.strip():
        problems[key] = (
            "A user or group name (local, or DOMAIN\\name) or a numeric id: no leading '-' or space, "
            "no ',' or ':', no control characters."
        )


def check_relative(path: str, problems: dict, key: str = "path") -> list[str]:
    """A folder below a dataset's mount point, as components: no '..', '.', empty parts, NUL or control
    characters, at most 4096 bytes (names read off the NAS are hostile input)."""
    parts = [p for p in path.split("/") if p]
    if (
        len(path.encode("utf-8", "surrogatepass")) > 4096
        or any(p in (".", "..", ".zfs") for p in parts)
        or any(ord(c) < 32 or ord(c) == 127 for c in path)
    ):
        problems[key] = "A folder inside the dataset: no '..', '.', '.zfs' or control characters."
        return []
    return parts


# --- what a user may do ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Verdict:
    perms: int  # each of r, w, x asked alone (as access(2) asks), after the mask
    why: str
    together: dict = field(
        default_factory=dict
    )  # {"wx": bool, "rw": bool}: asked at once (create in a folder, open rw)


def allows(acl: Acl, owner: int, group: int, uid: int, gids: set[int], want: int) -> bool:
    """Does the kernel grant uid (in gids) all of `want` (r=4 w=2 x=1) at once? Linux's check (fs/namei.c
    acl_permission_check, fs/posix_acl.c posix_acl_permission): the owner's entry; with an empty mask the ACL is not
    asked (the owning group gets nothing, others other's bits); a named user's entry under the mask; else one entry
    of the matching groups that grants all of it; else other's."""
    mask = acl.get(MASK)
    limit = mask.perms if mask else 7
    if uid == owner:
        return acl.get(USER_OBJ).perms & want == want
    if mask and not mask.perms:
        return want == 0 if group in gids else acl.get(OTHER).perms & want == want
    for e in acl.named:
        if e.tag == USER and e.id == uid:
            return e.perms & limit & want == want
    matching = ([acl.get(GROUP_OBJ)] if group in gids else []) + [
        e for e in acl.named if e.tag == GROUP and e.id in gids
    ]
    if matching:
        return any(e.perms & limit & want == want for e in matching)
    return acl.get(OTHER).perms & want == want


def effective(acl: Acl, owner: int, group: int, uid: int, gids: set[int], names: dict | None = None) -> Verdict:
    """The POSIX ACL access check (acl(5), "ACCESS CHECK ALGORITHM") for one user: which entry decides and what it
    gives, each permission alone and the pairs asked at once. root is not asked here (it may do anything but
    execute a file with no x)."""
    verdict = _effective(acl, owner, group, uid, gids, names)
    together = {"wx": allows(acl, owner, group, uid, gids, 3), "rw": allows(acl, owner, group, uid, gids, 6)}
    return Verdict(verdict.perms, verdict.why, together)


def _effective(acl: Acl, owner: int, group: int, uid: int, gids: set[int], names: dict | None = None) -> Verdict:
    names = names or {}
    mask = acl.get(MASK)

    def masked(perms: int) -> int:
        return perms & mask.perms if mask else perms

    def note(perms: int, base: int) -> str:
        return f", limited by the mask ({perms_text(mask.perms)})" if mask and perms != base else ""

    if uid == owner:
        e = acl.get(USER_OBJ)
        return Verdict(e.perms, f"the owner's entry ({names.get(('u', owner), owner)}: user::{perms_text(e.perms)})")
    if mask and not mask.perms:
        # Linux asks the ACL only when the mode's group bits (the mask) grant something (fs/namei.c,
        # acl_permission_check): with an empty mask the owning group gets nothing and everyone else other's bits.
        if group in gids:
            return Verdict(0, "the mask is empty (---): Linux then gives the owning group nothing")
        e = acl.get(OTHER)
        return Verdict(
            e.perms,
            f"the mask is empty (---): Linux then skips the ACL and gives everyone else's entry (other::{perms_text(e.perms)})",
        )
    for e in acl.named:
        if e.tag == USER and e.id == uid:
            got = masked(e.perms)
            return Verdict(
                got, f"the entry for user {names.get(('u', uid), uid)} ({perms_text(e.perms)})" + note(got, e.perms)
            )
    matching = []
    if group in gids:
        matching.append((acl.get(GROUP_OBJ), f"the owning group {names.get(('g', group), group)}"))
    matching += [(e, f"group {names.get(('g', e.id), e.id)}") for e in acl.named if e.tag == GROUP and e.id in gids]
    if matching:
        # Asked one permission at a time, any matching group entry that grants it grants it; asked together (w and x
        # to make a file in a folder), one entry must grant them all (the kernel's posix_acl_permission).
        got = 0
        for e, _ in matching:
            got |= masked(e.perms)
        said = " and ".join(f"{w} ({perms_text(e.perms)})" for e, w in matching)
        return Verdict(
            got, f"the entries of {said}" + (f", limited by the mask ({perms_text(mask.perms)})" if mask else "")
        )
    e = acl.get(OTHER)
    return Verdict(
        e.perms,
        f"everyone else's entry (other::{perms_text(e.perms)}): not the owner, no entry names them or their groups",
    )


# --- getfacl's text ----------------------------------------------------------------------------------------------


def getfacl_text(path: str, owner: str, group: str, mode: int, access: Acl, default: Acl | None, names: dict) -> str:
    """What `getfacl` prints for the folder (getfacl(1) format: named entries by name, '#effective:' where the mask
    takes something away), so the admin sees the ACL in the words of the tools they know."""
    flags = "".join(c if mode & b else "-" for c, b in (("s", 0o4000), ("s", 0o2000), ("t", 0o1000)))
    lines = [f"# file: {path.lstrip('/')}", f"# owner: {owner}", f"# group: {group}"]
    if flags != "---":
        lines.append(f"# flags: {flags}")

    def entries(acl: Acl, prefix: str = "") -> list[str]:
        mask = acl.get(MASK)
        out = []
        for e in acl.entries:
            who = names.get(("u" if e.tag == USER else "g", e.id), str(e.id)) if e.named else ""
            text = f"{prefix}{TAG_NAMES[e.tag]}:{who}:{perms_text(e.perms)}"
            if mask and e.tag in (USER, GROUP_OBJ, GROUP) and e.perms & ~mask.perms:
                text += f"\t#effective:{perms_text(e.perms & mask.perms)}"
            out.append(text)
        return out

    lines += entries(access)
    if default:
        lines += entries(default, "default:")
    return "\n".join(lines) + "\n\n"  # getfacl ends each file with an empty line


# --- the host ----------------------------------------------------------------------------------------------------


HELPER = f"{HELPER_DIR}/tarn-acl"
STATUS_DIR = "/run/tarn"  # a walk's progress, written by the helper as JSON


def install_helper(t: Transport) -> bool:
    """tarn-acl on the NAS, root's, from this Tarn's source (rewritten only when it differs): what changes folders
    runs from it, so the audit log names it rather than carrying its source."""
    return install_sources(t, {HELPER: acl_helper})


def _answer(done, command: str) -> dict:
    if done.returncode == acl_helper.REFUSED:
        raise PathNotAllowed(done.stderr.strip()[-500:])
    if done.returncode != 0:
        raise error_for(["tarn-acl", command], done.returncode, done.stderr)
    try:
        return json.loads(done.stdout)
    except ValueError:
        raise CommandFailed(["tarn-acl", command], 1, "the helper printed no answer") from None


def _ask(t: Transport, command: str, *args: str, timeout: float = 60) -> dict:
    """A read by the helper, its source sent to the host's python3 (as hostlib.atomic's is): nothing to install
    on a host Tarn may only read."""
    argv = python("-c", source_of(acl_helper), command, *args)
    return _answer(t.run(argv, timeout=timeout, check=False), command)


def _names_of(answer: dict) -> dict:
    """The helper's names of ids ({"u": {uid: name}, "g": {...}}) as getfacl_text and effective want them."""
    return {(k, int(i)): n for k in ("u", "g") for i, n in answer.get("names", {}).get(k, {}).items()}


@dataclass
class Folder:
    """A folder as the helper read it: the chain from / (for traverse), its ACLs, the names of the ids in them."""

    path: str
    uid: int
    gid: int
    mode: int
    owner: str
    group: str
    access: Acl
    default: Acl | None
    chain: list[dict]  # each folder from / down to this one: path, uid, gid, mode, access (Acl)
    names: dict
    other_dataset: bool = False

    @property
    def text(self) -> str:
        return getfacl_text(self.path, self.owner, self.group, self.mode, self.access, self.default, self.names)


def _acl(blob_hex: str | None, mode: int) -> Acl:
    return Acl.decode(bytes.fromhex(blob_hex)) if blob_hex else Acl.from_mode(mode)


def read(t: Transport, root: str, parts: list[str]) -> Folder:
    """A folder below a mount point, read without following any link (a link anywhere on the way is refused)."""
    answer = _ask(t, "read", root, json.dumps(parts))
    chain = [{**c, "access": _acl(c.get("access"), c["mode"])} for c in answer["chain"]]
    last = answer["chain"][-1]
    return Folder(
        path="/".join([root.rstrip("/"), *parts]),
        uid=last["uid"],
        gid=last["gid"],
        mode=last["mode"],
        owner=answer["owner"],
        group=answer["group"],
        access=chain[-1]["access"],
        default=Acl.decode(bytes.fromhex(last["default"])) if last.get("default") else None,
        chain=chain,
        names=_names_of(answer),
        other_dataset=answer.get("other_dataset", False),
    )


def children(t: Transport, root: str, parts: list[str], limit: int = 500) -> dict:
    """One folder's subfolders (sorted, at most `limit`): {"folders": [{name, other_dataset}], "more": n, "hidden": n}
    (names with control characters or not UTF-8 are counted, not shown)."""
    return _ask(t, "list", root, json.dumps(parts), str(int(limit)))


def resolve(t: Transport, users: list[str], groups: list[str]) -> dict:
    """Names (or numeric ids) of users and groups → ids through the host's NSS (local, winbind, sss): {"users":
    {name: [id, name] or None}, "groups": {...}}; numeric ids must name an account there too."""
    return _ask(t, "resolve", json.dumps({"users": users, "groups": groups}))


def account(t: Transport, name: str) -> dict | None:
    """A user's uid, name and groups (its gids) as the host resolves them; None if there is no such user."""
    return _ask(t, "account", name).get("account")


def spec(
    access: Acl, default: Acl | None, owner: int | None = None, group: int | None = None, special: int = 0
) -> dict:
    """What the helper writes: ACLs as hex of the kernel's xattr, special mode bits (setgid 0o2000, sticky 0o1000),
    and owner and group ids to set (None: left as they are)."""
    if special & ~0o3000:
        raise InvalidAcl({"special": "Only set-group-id and sticky may be set on folders."})
    return {
        "access": access.encode().hex(),
        "default": default.encode().hex() if default else None,
        "uid": owner,
        "gid": group,
        "special": special,
    }


def apply_one(t: Transport, root: str, parts: list[str], wanted: dict) -> dict:
    """Write one folder's ACLs (and owner, group, special bits): {"changed": bool, "before": hex, "after": hex}.
    Its arguments go on stdin: an ACL of thousands of entries is past what one command line takes."""
    install_helper(t)
    given = json.dumps({"root": root, "parts": parts, "spec": wanted})
    return _answer(t.run(python(HELPER, "set"), input=given, timeout=60, mutating=True, check=False), "set")


def _unit(kind: str, job: int) -> str:
    return f"tarn-{'project' if kind == 'project' else 'acl'}-{int(job)}"


def status_path(job: int, kind: str = "acl") -> str:
    return f"{STATUS_DIR}/{_unit(kind, job)}.json"


def args_path(job: int, kind: str = "acl") -> str:
    return f"{STATUS_DIR}/{_unit(kind, job)}.args"


def unit_name(job: int, kind: str = "acl") -> str:
    return _unit(kind, job)


# The walk's unit may open no device node (a name in the tree swapped for one between the listing and the open would
# otherwise be opened by root: a tape rewinds, a watchdog starts).
WALK_PROPERTIES = ("DevicePolicy=closed",)


def walk_start(t: Transport, job: int, command: str, root: str, parts: list[str], given: dict) -> None:
    """A recursive walk (count: the preview; apply; project) as a transient unit on the host: it outlives a worker,
    and `systemctl stop` stops it between two files (hostlib.acl_helper). Its arguments go in a root-only file,
    never in the unit's command line: systemd expands $ and % there, so a folder named Bob${X} would become Bob."""
    if command not in ("count", "apply", "project"):
        raise HostError(f"not a walk: {command}")
    kind = "project" if command == "project" else "acl"
    install_helper(t)
    t.run(["install", "-d", "-m", "0700", "--", STATUS_DIR], mutating=True)
    t.remove_file(status_path(job, kind))
    t.write_file(args_path(job, kind), json.dumps({"root": root, "parts": parts, **given}), mode=0o600)
    argv = python(HELPER, command, args_path(job, kind), status_path(job, kind))
    systemd.start(t, unit_name(job, kind), argv, description=f"Tarn ACL {command} {job}", properties=WALK_PROPERTIES)


def walk_progress(t: Transport, walk: int, kind: str = "acl") -> dict:
    """The walk's last progress as the helper wrote it (folders, files, changed, skipped by reason, done, stopped,
    error); {} before its first write."""
    text = t.run(["cat", "--", status_path(walk, kind)], check=False, timeout=30).stdout.strip()
    try:
        return json.loads(text) if text else {}
    except ValueError:
        return {}


def walk_stop(t: Transport, walk: int, kind: str = "acl") -> None:
    systemd.stop(t, unit_name(walk, kind))


def walk_state(t: Transport, walk: int, kind: str = "acl") -> tuple[str, str]:
    return systemd.service_state(t, unit_name(walk, kind))


def walk_forget(t: Transport, walk: int, kind: str = "acl") -> None:
    """The ended walk's unit, arguments and status file cleaned up."""
    systemd.reset_failed(t, unit_name(walk, kind))
    t.remove_file(status_path(walk, kind))
    t.remove_file(args_path(walk, kind))
