"""A folder's ACL as the editor gives it (the `spec`): owner and group (names; blank keeps them), the owner's,
group's and others' permissions ("rwx" strings), set-gid and sticky, `defaults` (new files and folders inherit the same
ACL), and named entries [{kind, name, perms}]. Checked, resolved on the host, and written to one folder as an
Operation (everything inside: permissions.services.walks). Changes that take all ACLs away or take access from the
folder's owner or from the admin's own account on the host need the folder's name typed."""

from dataclasses import dataclass

from django.core.exceptions import ValidationError

from appliance.checks import confirmed, host_said
from appliance.choices import AccountKind
from appliance.connect import transport_for
from appliance.models import Operation
from appliance.operations import Tracker, operation_runner, operation_start
from hostlib import acl, zfs
from hostlib.errors import HostError
from hostlib.runner import Transport
from permissions.services.folders import Place, folder_read, missing_account, place
from pools.services import Scope, inventory_refresh

LOCK = "acl"  # one ACL job per dataset: host:<name>:acl:<dataset>


# --- the editor's ACL --------------------------------------------------------------------------------------------


def _check_spec(spec: dict) -> dict[str, str]:
    problems: dict[str, str] = {}
    for key in ("owner_perms", "group_perms", "other_perms"):
        if not acl.PERMS.fullmatch(str(spec.get(key, ""))):
            problems[key] = "Three of r, w, x or - (e.g. rwx, r-x, ---)."
    for key in ("owner", "group"):
        if spec.get(key):
            acl.check_name(spec[key], key, problems)
    seen = set()
    entries = spec.get("entries") or []
    if len(entries) > acl.MAX_ENTRIES - 4:
        problems["entries"] = f"At most {acl.MAX_ENTRIES - 4} named entries (the kernel's 64 KiB limit for one ACL)."
        return problems
    for n, entry in enumerate(entries):
        key = f"entries-{n}"
        if entry.get("kind") not in AccountKind.values:
            problems[f"{key}-kind"] = "user or group."
        acl.check_name(entry.get("name", ""), f"{key}-name", problems)
        if not acl.PERMS.fullmatch(str(entry.get("perms", ""))):
            problems[f"{key}-perms"] = "Three of r, w, x or -."
        if (entry.get("kind"), entry.get("name")) in seen:
            problems[f"{key}-name"] = f"{entry.get('name')} is named twice."
        seen.add((entry.get("kind"), entry.get("name")))
    return problems


def acl_resolve(t: Transport, spec: dict, host_name: str) -> dict:
    """The editor's ACL checked, then its names resolved on the host (local accounts, the domain's, LDAP's): what
    the helper writes. Unknown names and ids are refused on their field."""
    problems = _check_spec(spec)
    if problems:
        raise ValidationError(problems)
    entries = spec.get("entries") or []
    users = [e["name"] for e in entries if e["kind"] == AccountKind.USER] + (
        [spec["owner"]] if spec.get("owner") else []
    )
    groups = [e["name"] for e in entries if e["kind"] == AccountKind.GROUP] + (
        [spec["group"]] if spec.get("group") else []
    )
    try:
        found = acl.resolve(t, users, groups) if users or groups else {"users": {}, "groups": {}}
    except HostError as exc:
        raise host_said(exc, "entries") from None

    def missing(kind: str, name: str) -> str:
        return missing_account(kind, name, host_name)

    named = {AccountKind.USER: {}, AccountKind.GROUP: {}}
    for n, e in enumerate(entries):
        got = found["users" if e["kind"] == AccountKind.USER else "groups"].get(e["name"])
        if got is None:
            problems[f"entries-{n}-name"] = missing(e["kind"], e["name"])
            continue
        if got[0] in named[e["kind"]]:
            problems[f"entries-{n}-name"] = f"{e['name']} is {got[1]}, named already."
        named[e["kind"]][got[0]] = acl.perms_of(e["perms"])
    owner = found["users"].get(spec["owner"]) if spec.get("owner") else None
    group = found["groups"].get(spec["group"]) if spec.get("group") else None
    if spec.get("owner") and owner is None:
        problems["owner"] = missing("user", spec["owner"])
    if spec.get("group") and group is None:
        problems["group"] = missing("group", spec["group"])
    if problems:
        raise ValidationError(problems)
    try:
        access = acl.build(
            acl.perms_of(spec["owner_perms"]),
            acl.perms_of(spec["group_perms"]),
            acl.perms_of(spec["other_perms"]),
            named[AccountKind.USER],
            named[AccountKind.GROUP],
        )
    except acl.InvalidAcl as exc:
        raise ValidationError(exc.problems) from None
    special = (0o2000 if spec.get("setgid") else 0) | (0o1000 if spec.get("sticky") else 0)
    return {
        "uid": owner[0] if owner else None,
        "gid": group[0] if group else None,
        "access": access.encode().hex(),
        "default": access.encode().hex() if spec.get("defaults") else None,
        "special": special,
    }


def _risks(t: Transport, where: Place, folder: acl.Folder, resolved: dict, user) -> list[str]:
    """What the change takes away that needs the folder's name typed: every ACL entry, or access (read or enter)
    the folder's owner or the admin's own account on the host has now."""
    access = acl.Acl.decode(bytes.fromhex(resolved["access"]))
    said = []
    had_acl = not folder.access.minimal or folder.default is not None
    if had_acl and access.minimal and not resolved["default"]:
        said.append("it removes every ACL entry of the folder")
    owner = resolved["uid"] if resolved["uid"] is not None else folder.uid
    group = resolved["gid"] if resolved["gid"] is not None else folder.gid
    who = [(folder.uid, set(), f"its owner {folder.owner}")] if folder.uid != 0 else []  # root passes every check
    mine = acl.account(t, user.username) if getattr(user, "username", "") else None
    if mine and mine["uid"] != 0:
        who.append((mine["uid"], set(mine["gids"]), f"your account {mine['name']} on {where.host.name}"))
    for uid, gids, name in who:
        before = acl.effective(folder.access, folder.uid, folder.gid, uid, gids).perms
        after = acl.effective(access, owner, group, uid, gids).perms
        lost = before & ~after & 0o5  # read or enter
        if lost:
            said.append(f"{name} loses {acl.perms_text(lost).replace('-', '')}")
    return said


@dataclass
class Checked:
    where: Place
    resolved: dict
    props: dict  # dataset properties set first (acltype, xattr)
    plan: list[str]  # the same, in words
    risks: list[str]


def acl_check(*, host, user, dataset: str, path: str, spec: dict, confirm: str = "") -> Checked:
    """Everything a change is checked against before an Operation exists: the folder (inventory, path, read on the
    host), the ACL (names resolved there), what it takes away (the folder's name typed), and the plan (acltype and
    xattr set on the dataset first when an ACL needs them)."""
    where = place(host=host, dataset=dataset, path=path)
    t = transport_for(host, read_only=True)
    folder = folder_read(where=where)
    resolved = acl_resolve(t, spec, host.name)
    try:
        risks = _risks(t, where, folder, resolved, user)
    except HostError as exc:
        raise host_said(exc) from None
    if risks:
        confirmed(confirm, where.name, f"This change {'; '.join(risks)}: type {where.name} to go ahead.")
    extended = not acl.Acl.decode(bytes.fromhex(resolved["access"])).minimal or resolved["default"]
    props, plan = {}, []
    if extended and where.acltype != "posix":
        props["acltype"] = "posix"
        plan.append(
            f"Set acltype=posix on {where.dataset} (it is {where.acltype or 'off'}): Linux keeps ACLs only then"
        )
    if extended and where.xattr not in ("sa", "on"):
        props["xattr"] = "sa"
        plan.append(f"Set xattr=sa on {where.dataset}: ACLs kept beside each file's metadata, not in hidden folders")
    return Checked(where, resolved, props, plan, risks)


def params_of(checked: Checked, spec: dict) -> dict:
    return {
        "dataset": checked.where.dataset,
        "path": checked.where.path,
        "root": checked.where.root,
        "spec": spec,
        "resolved": checked.resolved,
        "props": checked.props,
        "plan": checked.plan,
    }


def prepare(t: Transport, op: Operation) -> None:
    """The plan's dataset properties, before any ACL is written."""
    props = op.params.get("props") or {}
    if props:
        t.run(zfs.set_argv(op.params["dataset"], props), mutating=True, timeout=60)
        inventory_refresh(host=op.host, operation=op, scope=Scope(datasets=[op.params["dataset"]]))


def acl_set_start(*, host, user, dataset: str, path: str = "", spec: dict, confirm: str = "") -> Operation:
    """Write the ACL on this one folder (what is inside keeps its own)."""
    checked = acl_check(host=host, user=user, dataset=dataset, path=path, spec=spec, confirm=confirm)
    return operation_start(
        kind="permissions.acl_set", host=host, user=user, subject=checked.where.dataset, params=params_of(checked, spec)
    )


@operation_runner("permissions.acl_set", lock=LOCK, queue="host")
def acl_set_run(tracker: Tracker) -> None:
    op, p = tracker.op, tracker.op.params
    t = tracker.transport()
    prepare(t, op)
    got = acl.apply_one(t, p["root"], [x for x in p["path"].split("/") if x], p["resolved"])
    where = f"{p['dataset']}/{p['path']}".rstrip("/")
    tracker.progress(100, f"Changed the ACL of {where}." if got["changed"] else f"{where} had this ACL already.")
