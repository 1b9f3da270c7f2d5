"""A folder's ACL: read live from the host (ACLs are not in the inventory: a dataset may hold millions of files),
checked, resolved on the host, and written as an Operation: to one folder, or, after a preview that counts what
would change, to everything inside it (a walk on the host: it outlives a worker and stops when asked).

What an admin gives (the editor's `spec`): owner and group (names; blank keeps them), the owner's, group's and
others' permissions ("rwx" strings), set-gid and sticky, `defaults` (new files and folders inherit the same ACL),
and named entries [{kind, name, perms}]. Changes that take all ACLs away or take access from the folder's owner or
from the admin's own account on the host need the folder's name typed."""

import time
from dataclasses import dataclass

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from appliance.checks import confirmed
from appliance.choices import AccountKind
from appliance.connect import transport_for
from appliance.models import Operation
from appliance.operations import Tracker, operation_runner, operation_start
from hostlib import acl, zfs
from hostlib.errors import HostError
from hostlib.runner import Transport
from permissions.choices import PREVIEW_MINUTES, WALK_POLL_SECONDS, WalkStatus, is_system_mount
from permissions.models import AclWalk
from pools import selectors as pools
from pools.services import Scope, inventory_refresh

pause = time.sleep  # between two looks at a walk (a test's hook)
LOCK = "acl"  # one ACL job per dataset: host:<name>:acl:<dataset>
STATE_EVERY = 5  # polls between two questions to systemd (the status file says when the walk is done)


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


def _host_said(exc: HostError, key: str = "path") -> ValidationError:
    return ValidationError({key: str(exc)[:300]})


def folder_read(*, where: Place) -> acl.Folder:
    try:
        return acl.read(transport_for(where.host, read_only=True), where.root, where.parts)
    except HostError as exc:
        raise _host_said(exc) from None


def folder_children(*, where: Place, limit: int = 500) -> dict:
    try:
        return acl.children(transport_for(where.host, read_only=True), where.root, where.parts, limit)
    except HostError as exc:
        raise _host_said(exc) from None


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
        raise _host_said(exc, "user") from None
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
        raise _host_said(exc, "entries") from None

    def missing(kind: str, name: str) -> str:
        said = "No account has the id" if name.isascii() and name.isdigit() else f"No {kind} named"
        return f"{said} {name!r} on {host_name}."

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
    plan: list[str]
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
        raise _host_said(exc) from None
    if risks:
        confirmed(confirm, where.name, f"This change {'; '.join(risks)}: type {where.name} to go ahead.")
    extended = not acl.Acl.decode(bytes.fromhex(resolved["access"])).minimal or resolved["default"]
    plan = []
    if extended and where.acltype != "posix":
        plan.append(
            f"Set acltype=posix on {where.dataset} (it is {where.acltype or 'off'}): Linux keeps ACLs only then"
        )
    if extended and where.xattr not in ("sa", "on"):
        plan.append(f"Set xattr=sa on {where.dataset}: ACLs kept beside each file's metadata, not in hidden folders")
    return Checked(where, resolved, plan, risks)


def _params(checked: Checked, spec: dict) -> dict:
    return {
        "dataset": checked.where.dataset,
        "path": checked.where.path,
        "root": checked.where.root,
        "spec": spec,
        "resolved": checked.resolved,
        "plan": checked.plan,
    }


def _prepare(t: Transport, op: Operation) -> None:
    """The plan's dataset properties, before any ACL is written."""
    props = {}
    for step in op.params.get("plan", []):
        if "acltype=posix" in step:
            props["acltype"] = "posix"
        if "xattr=sa" in step:
            props["xattr"] = "sa"
    if props:
        t.run(zfs.set_argv(op.params["dataset"], props), mutating=True, timeout=60)
        inventory_refresh(host=op.host, operation=op, scope=Scope(datasets=[op.params["dataset"]]))


def acl_set_start(*, host, user, dataset: str, path: str = "", spec: dict, confirm: str = "") -> Operation:
    """Write the ACL on this one folder (what is inside keeps its own)."""
    checked = acl_check(host=host, user=user, dataset=dataset, path=path, spec=spec, confirm=confirm)
    return operation_start(
        kind="permissions.acl_set", host=host, user=user, subject=checked.where.dataset, params=_params(checked, spec)
    )


@operation_runner("permissions.acl_set", lock=LOCK, queue="host")
def acl_set_run(tracker: Tracker) -> None:
    op, p = tracker.op, tracker.op.params
    t = tracker.transport()
    _prepare(t, op)
    got = acl.apply_one(t, p["root"], [x for x in p["path"].split("/") if x], p["resolved"])
    where = f"{p['dataset']}/{p['path']}".rstrip("/")
    tracker.progress(100, f"Changed the ACL of {where}." if got["changed"] else f"{where} had this ACL already.")


# --- everything inside: preview, apply, stop ---------------------------------------------------------------------


def walk_count_start(*, host, user, dataset: str, path: str = "", spec: dict, confirm: str = "") -> AclWalk:
    """Count what applying the ACL to the folder and everything inside would change (nothing is written)."""
    checked = acl_check(host=host, user=user, dataset=dataset, path=path, spec=spec, confirm=confirm)
    with transaction.atomic():
        walk = AclWalk.objects.create(
            host=host,
            dataset=checked.where.dataset,
            path=checked.where.path,
            spec={**_params(checked, spec), "risks": checked.risks},
            created_by=user if getattr(user, "pk", None) else None,
        )
        walk.count_operation = operation_start(
            kind="permissions.walk_count",
            host=host,
            user=user,
            subject=walk.dataset,
            params={"walk": walk.pk, "dataset": walk.dataset},
        )
        walk.save(update_fields=["count_operation"])
    return walk


def walk_apply_start(*, walk: AclWalk, user, confirm: str = "") -> Operation:
    """Apply a previewed walk: only as previewed (the same ACL), only while its preview is fresh, and with the
    folder's name typed when the preview found ACLs it takes away or owners it changes below the folder."""
    if walk.status != WalkStatus.PREVIEWED:
        raise ValidationError(f"Only a previewed walk is applied; this one is {walk.get_status_display()}.")
    if walk.previewed_at < timezone.now() - timezone.timedelta(minutes=PREVIEW_MINUTES):
        raise ValidationError(f"The preview is older than {PREVIEW_MINUTES} minutes: count again first.")
    removed, owners = walk.preview.get("acl_removed", 0), walk.preview.get("owner_changed", 0)
    if removed or owners:
        said = [
            f"removes {removed} ACL{'s' if removed != 1 else ''}" if removed else "",
            f"gives {owners} file{'s' if owners != 1 else ''} and folders a new owner" if owners else "",
        ]
        confirmed(confirm, walk.name, f"This {' and '.join(x for x in said if x)}: type {walk.name} to go ahead.")
    with transaction.atomic():
        claimed = AclWalk.objects.filter(pk=walk.pk, status=WalkStatus.PREVIEWED).update(
            status=WalkStatus.APPLYING, applied={}, stop_requested=False
        )
        if not claimed:
            raise ValidationError("This walk was applied already.")
        op = operation_start(
            kind="permissions.walk_apply",
            host=walk.host,
            user=user,
            subject=walk.dataset,
            params={"walk": walk.pk, "dataset": walk.dataset, "plan": walk.spec.get("plan", [])},
        )
        AclWalk.objects.filter(pk=walk.pk).update(apply_operation=op)
    return op


def walk_stop(*, walk: AclWalk, user) -> None:
    """Ask a counting or applying walk to stop: between two files, what is done stays done."""
    running = (WalkStatus.COUNTING, WalkStatus.APPLYING)
    if not AclWalk.objects.filter(pk=walk.pk, status__in=running).update(stop_requested=True):
        raise ValidationError(f"This walk is {walk.get_status_display()}: nothing to stop.")


def follow(tracker: Tracker, t: Transport, job: int, kind: str, *, total: int, save, stopping, doing: str) -> dict:
    """Poll a walk's status file on the host until it ends: its progress saved (save(said)) and shown, its unit
    stopped when asked (stopping()); if following fails (the host went away, the worker is stopped) the unit is
    stopped too, so no walk goes on that nobody follows. Returns its last status."""
    polls, said = 0, {}
    try:
        while True:
            pause(WALK_POLL_SECONDS)
            polls += 1
            if stopping():
                acl.walk_stop(t, job, kind)
            said = acl.walk_progress(t, job, kind) or said
            if said:
                save(said)
                seen = sum(said.get(k, 0) for k in ("folders", "files", "links", "hardlinked", "other"))
                percent = min(99, int(100 * seen / total)) if total else min(95, polls)
                tracker.progress(
                    percent,
                    f"{said.get('folders', 0)} folders, {said.get('files', 0)} files, {said.get('changed', 0)} {doing}",
                )
            if said.get("done") or said.get("stopped") or said.get("error") or polls % STATE_EVERY == 0:
                state, result = acl.walk_state(t, job, kind)
                if state in ("inactive", "failed"):
                    said = acl.walk_progress(t, job, kind) or said
                    save(said)
                    acl.walk_forget(t, job, kind)
                    if said.get("error") or (result not in ("", "success") and not said.get("stopped")):
                        raise HostError(f"The walk failed: {said.get('error') or result}")
                    return said
    except BaseException:
        try:
            acl.walk_stop(t, job, kind)
        except HostError:
            pass
        raise


def _follow(tracker: Tracker, t: Transport, walk: AclWalk, field: str, total: int) -> dict:
    return follow(
        tracker,
        t,
        walk.pk,
        "acl",
        total=total,
        save=lambda said: AclWalk.objects.filter(pk=walk.pk).update(**{field: said}),
        stopping=lambda: AclWalk.objects.filter(pk=walk.pk, stop_requested=True).exists(),
        doing="to change" if field == "preview" else "changed",
    )


def _walk_of(tracker: Tracker) -> AclWalk:
    return AclWalk.objects.select_related("host").get(pk=tracker.op.params["walk"])


def _ended(walk: AclWalk, status: str, **fields) -> None:
    AclWalk.objects.filter(pk=walk.pk).update(status=status, finished_at=timezone.now(), **fields)


def _skipped(said: dict) -> str:
    """What the walk could not do, said (empty when it did everything it met)."""
    parts = []
    if said.get("failed"):
        parts.append(f"{said['failed']} could not be changed (see the host's journal)")
    if said.get("too_deep"):
        parts.append(f"{said['too_deep']} folder{'s' if said['too_deep'] != 1 else ''} too deep to walk")
    return "; ".join(parts)


def _parts(walk: AclWalk) -> list[str]:
    return [x for x in walk.spec["path"].split("/") if x]


@operation_runner("permissions.walk_count", lock=LOCK, queue="host")
def walk_count_run(tracker: Tracker) -> None:
    walk = _walk_of(tracker)
    t = tracker.transport()
    s = walk.spec
    try:
        acl.walk_start(t, walk.pk, "count", s["root"], _parts(walk), {"spec": s["resolved"]})
        said = _follow(tracker, t, walk, "preview", 0)
    except Exception:
        _ended(walk, WalkStatus.FAILED)
        raise
    if said.get("stopped"):
        _ended(walk, WalkStatus.STOPPED)
        tracker.progress(100, "Stopped before the count was done; nothing was changed.")
        return
    AclWalk.objects.filter(pk=walk.pk).update(status=WalkStatus.PREVIEWED, previewed_at=timezone.now())
    message = f"{said['changed']} of {said['folders']} folders and {said['files']} files would change."
    tracker.progress(100, f"{message} {_skipped(said)}".strip())


@operation_runner("permissions.walk_apply", lock=LOCK, queue="host")
def walk_apply_run(tracker: Tracker) -> None:
    walk = _walk_of(tracker)
    t = tracker.transport()
    s = walk.spec
    try:
        _prepare(t, tracker.op)
        acl.walk_start(t, walk.pk, "apply", s["root"], _parts(walk), {"spec": s["resolved"]})
        said = _follow(tracker, t, walk, "applied", walk.total)
    except Exception:
        _ended(walk, WalkStatus.FAILED)
        raise
    changed = f"{said.get('changed', 0)} folders and files changed"
    if said.get("stopped"):
        _ended(walk, WalkStatus.STOPPED)
        tracker.progress(100, f"Stopped: {changed}; the rest keep theirs.")
        return
    if _skipped(said):
        _ended(walk, WalkStatus.FAILED)
        raise HostError(f"Applied in part: {changed}, but {_skipped(said)}.")
    _ended(walk, WalkStatus.APPLIED)
    tracker.progress(100, f"Applied: {changed}.")
