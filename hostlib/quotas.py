"""User, group and project quotas of a dataset: read with `zfs userspace|groupspace|projectspace -Hp` (one call
per dataset and kind), set and cleared with `zfs set userquota@<id>=…` (ids resolved on the host first, never a
name typed into a property), and projects given to folders (the project id and its inherit flag, set by the helper
on descriptors opened without following a link: hostlib.acl_helper's `project`).

OpenZFS 2.3 (the lab's) has no default quotas (`defaultuserquota`, OpenZFS 2.4): each account's quota is its own."""

from dataclasses import dataclass

from hostlib import names
from hostlib.acl import NAME
from hostlib.digits import is_digits
from hostlib.runner import Transport

# kind → (the listing, the byte quota property, the object quota property, -t for the listing)
KINDS = {
    "user": ("userspace", "userquota", "userobjquota", "posixuser"),
    "group": ("groupspace", "groupquota", "groupobjquota", "posixgroup"),
    "project": ("projectspace", "projectquota", "projectobjquota", ""),
}
MAX_QUOTA = (1 << 63) - 1  # OpenZFS keeps quotas as uint64; Tarn stays below 2^63 (8 EiB), past any pool
MAX_PROJECT = (1 << 32) - 2  # a project id is a u32; 4294967295 is "none"
LISTING_TIMEOUT = 300  # a dataset with 100,000 owners takes seconds, not minutes, even emulated
TYPES = {"POSIX User": "user", "POSIX Group": "group", "Project": "project"}


class InvalidQuota(ValueError):
    def __init__(self, problems: dict[str, str]):
        self.problems = problems
        super().__init__("; ".join(f"{k}: {v}" for k, v in problems.items()))


@dataclass(frozen=True)
class Use:
    kind: str  # user, group, project
    name: str  # as the host names it (a name, or an id it cannot name)
    used: int
    quota: int | None  # None: no quota
    objused: int
    objquota: int | None

    @property
    def percent(self) -> float | None:
        return 100.0 * self.used / self.quota if self.quota else None


def _number(text: str) -> int | None:
    if text in ("none", "-", ""):
        return None
    if not is_digits(text):
        raise ValueError(text)
    return int(text)


def space_argv(kind: str, dataset: str) -> list[str]:
    listing, _, _, types = KINDS[kind]
    argv = ["zfs", listing, "-H", "-p"]
    if kind == "project":
        argv += ["-o", "name,used,quota,objused,objquota"]
    else:
        argv += ["-o", "type,name,used,quota,objused,objquota", "-t", types]
    return [*argv, "--", names.dataset_name(dataset)]


def parse_space(kind: str, text: str) -> tuple[list[Use], int]:
    """The listing's rows, and how many lines it left out (a name Tarn will not show: control characters, a
    tab, or not an account name; a line of another shape)."""
    rows, left_out = [], 0
    for line in text.splitlines():
        if not line:
            continue
        fields = line.split("\t")
        if kind != "project":
            if len(fields) != 6 or TYPES.get(fields[0]) != kind:
                left_out += 1
                continue
            fields = fields[1:]
        if len(fields) != 5:
            left_out += 1
            continue
        name, used, quota, objused, objquota = fields
        if not (NAME.fullmatch(name) if kind != "project" else is_digits(name)):
            left_out += 1
            continue
        try:
            # -p prints no quota as 0 (and a quota of 0 cannot be set: it clears)
            rows.append(
                Use(
                    kind,
                    name,
                    _number(used) or 0,
                    _number(quota) or None,
                    _number(objused) or 0,
                    _number(objquota) or None,
                )
            )
        except ValueError:
            left_out += 1
    return rows, left_out


def space(t: Transport, kind: str, dataset: str) -> tuple[list[Use], int]:
    done = t.run(space_argv(kind, dataset), timeout=LISTING_TIMEOUT, max_output=256 << 20)
    return parse_space(kind, done.stdout)


def quota_value(value, field: str = "quota") -> int | None:
    """A quota as typed: a size with the same rules as every other size (64M, 1T, bytes: ASCII digits; no
    fractions), or none/blank for no quota. 0 is refused (it would read as "no quota" to OpenZFS: say Clear)."""
    text = str(value).strip()
    if text.lower() in ("", "none"):
        return None
    try:
        size = names.parse_size(text)
    except ValueError as exc:
        raise InvalidQuota({field: f"A size: {exc}; or none."}) from None
    if size == 0:
        raise InvalidQuota({field: "0 is no quota to OpenZFS: leave it empty (or Clear) to remove the quota."})
    if size > MAX_QUOTA:
        raise InvalidQuota({field: "At most 8E (2^63 - 1 bytes)."})
    return size


def object_quota(value, field: str = "objquota") -> int | None:
    text = str(value).strip()
    if text.lower() in ("", "none"):
        return None
    if not is_digits(text) or int(text) == 0 or int(text) > MAX_QUOTA:
        raise InvalidQuota({field: "A number of files and folders (1 or more), or none."})
    return int(text)


def project_id(value, field: str = "project") -> int:
    text = str(value).strip()
    if not is_digits(text) or not 1 <= int(text) <= MAX_PROJECT:
        raise InvalidQuota({field: f"A project id from 1 to {MAX_PROJECT}."})
    return int(text)


def set_argv(kind: str, dataset: str, ident: int, quota: int | None, objquota: int | None) -> list[str]:
    """One `zfs set` for both quotas of an account (by id: never a name in a property), none clearing them."""
    _, prop, objprop, _ = KINDS[kind]
    if not isinstance(ident, int) or ident < 0 or ident > MAX_PROJECT + 1:
        raise InvalidQuota({"name": "Not an id."})
    values = [f"{prop}@{ident}={quota if quota is not None else 'none'}"]
    values.append(f"{objprop}@{ident}={objquota if objquota is not None else 'none'}")
    return ["zfs", "set", *values, "--", names.dataset_name(dataset)]
