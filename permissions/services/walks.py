"""An ACL applied to a folder and everything inside it: counted first (a walk on the host that writes nothing: how
many folders and files, how many would change, what it skips and why, what it takes away), then applied on the
admin's go-ahead, or stopped between two files. The walk is a transient unit on the host (it outlives a worker);
`follow` watches it (a project's walk too: permissions.services.quotas)."""

import time

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from appliance.checks import confirmed
from appliance.models import Operation
from appliance.operations import Tracker, operation_runner, operation_start
from hostlib import acl
from hostlib.errors import HostError
from hostlib.runner import Transport
from permissions.choices import PREVIEW_MINUTES, WALK_POLL_SECONDS, WalkStatus
from permissions.models import AclWalk
from permissions.services.acls import LOCK, acl_check, params_of, prepare

pause = time.sleep  # between two looks at a walk (a test's hook)
STATE_EVERY = 5  # polls between two questions to systemd (the status file says when the walk is done)


def walk_count_start(*, host, user, dataset: str, path: str = "", spec: dict, confirm: str = "") -> AclWalk:
    """Count what applying the ACL to the folder and everything inside would change (nothing is written)."""
    checked = acl_check(host=host, user=user, dataset=dataset, path=path, spec=spec, confirm=confirm)
    with transaction.atomic():
        walk = AclWalk.objects.create(
            host=host,
            dataset=checked.where.dataset,
            path=checked.where.path,
            spec={**params_of(checked, spec), "risks": checked.risks},
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
            params={"walk": walk.pk, "dataset": walk.dataset, "props": walk.spec.get("props", {})},
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


def _walked(tracker: Tracker, walk: AclWalk, command: str, phase: str, total: int, first=None) -> dict:
    """The walk's unit started on the NAS (after first(transport, operation), if given) and followed to its end: its
    last counts. Anything failing marks the walk failed."""
    t = tracker.transport()
    try:
        if first is not None:
            first(t, tracker.op)
        acl.walk_start(t, walk.pk, command, walk.spec["root"], _parts(walk), {"spec": walk.spec["resolved"]})
        return _follow(tracker, t, walk, phase, total)
    except Exception:
        _ended(walk, WalkStatus.FAILED)
        raise


@operation_runner("permissions.walk_count", lock=LOCK, queue="host")
def walk_count_run(tracker: Tracker) -> None:
    walk = _walk_of(tracker)
    said = _walked(tracker, walk, "count", "preview", 0)
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
    said = _walked(tracker, walk, "apply", "applied", walk.total, first=prepare)
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
