"""Restoring a file or folder out of a snapshot: an Operation (one restore per dataset at a time), a safety snapshot
of the live dataset first when it goes back in place, then tarn-restore on the NAS as a unit that outlives the worker
(hostlib.restores), followed for its bytes and files, stoppable. A copy that fails or is stopped leaves the original
as it was (the helper removes its half copy)."""

import time
from datetime import timedelta

from django.core.exceptions import ValidationError
from django.utils import timezone

from appliance.checks import confirmed
from appliance.choices import Role
from appliance.operations import Tracker, operation_runner, operation_start
from hostlib import restores
from hostlib.errors import HostError
from pools import selectors as pools
from pools.services import Scope, inventory_refresh, snapshot_destroy_start
from recovery.choices import (
    POLL_SECONDS,
    QUICK_POLLS,
    QUICK_SECONDS,
    SAFETY_KEEP_DAYS,
    SAFETY_PREFIX,
    How,
    RestoreStatus,
)
from recovery.models import Restore
from recovery.services.browse import where as place

LOCK = "recovery"
STATE_EVERY = 5  # polls between two looks at the unit itself (a helper that died without a last word)


def restore_start(*, host, user, dataset: str, snapshot: str, path: str, how: str, confirm: str = "") -> Restore:
    """Refused, naming the field: no snapshot, no path, a way that is not one, a restore in place without the name
    typed (it replaces the live copy), another restore running in the dataset."""
    if not snapshot:
        raise ValidationError({"snapshot": "Pick the snapshot to restore from."})
    if how not in How.values:
        raise ValidationError({"how": f"One of: {', '.join(How.values)}."})
    where = place(host=host, dataset=dataset, snapshot=snapshot, path=path)
    if not where.parts:
        raise ValidationError({"path": "Name a file or folder: the dataset itself is rolled back, not restored."})
    shown = "/".join(where.names)
    last = where.names[-1]
    if how == How.PLACE:
        confirmed(confirm, last, f"Type {last} to replace the live copy (a safety snapshot is taken first).")
    name = f"{last}.restored-{snapshot}" if how == How.BESIDE else ""
    if how == How.BESIDE and len(_beside(where.parts[-1], snapshot)) > 255:
        raise ValidationError(
            {"how": "Its name and .restored-<snapshot> come to more than 255 bytes: restore it in place."}
        )
    row = Restore.objects.create(host=host, dataset=where.dataset.name, snapshot=snapshot, path=where.path,
                                 shown=shown, how=how, name=name, created_by=user)  # fmt: skip
    op = operation_start(kind="recovery.restore", host=host, user=user, subject=where.dataset.name,
                         params={"restore": row.pk, "dataset": where.dataset.name})  # fmt: skip
    Restore.objects.filter(pk=row.pk).update(operation=op)
    row.operation = op
    return row


def restore_stop(*, restore: Restore, user) -> None:
    """Ask a running restore to stop: its half copy is removed, the original stays."""
    if not user.has_role(Role.OPERATOR):
        raise ValidationError("Only an operator or an admin stops a restore.")
    if not Restore.objects.filter(pk=restore.pk, status=RestoreStatus.RUNNING).update(stop_requested=True):
        raise ValidationError(f"This restore is {restore.get_status_display()}: nothing to stop.")


def _ended(row: Restore, status: str, said: dict) -> None:
    Restore.objects.filter(pk=row.pk).update(status=status, progress=said, finished_at=timezone.now())


@operation_runner("recovery.restore", lock=LOCK, queue="default")
def restore_run(tracker: Tracker) -> None:
    row = Restore.objects.select_related("host").get(pk=tracker.op.params["restore"])
    t = tracker.transport()
    try:
        dataset = pools.mounted_filesystem(host=row.host, name=row.dataset)
        if dataset is None:
            raise HostError(f"{row.dataset} is no longer a mounted filesystem")
        if row.how == How.PLACE:
            tracker.progress(1, "Taking a safety snapshot")
            stamp = timezone.now().strftime("%Y-%m-%d_%H-%M-%S")
            row.safety = restores.safety_snapshot(t, row.dataset, f"{SAFETY_PREFIX}-{stamp}-{row.pk}")
            Restore.objects.filter(pk=row.pk).update(safety=row.safety)
            tracker.log(f"safety snapshot {row.safety}: the live copy as it was")
        name = _beside(row.path.split("/")[-1], row.snapshot).hex() if row.how == How.BESIDE else ""
        restores.start(t, row.pk, pool=dataset.name.split("/")[0], mount=dataset.mountpoint, snapshot=row.snapshot,
                       parts=row.path.split("/"), how=row.how, name=name)  # fmt: skip
        said = _follow(tracker, t, row)
    except BaseException as exc:
        said = Restore.objects.values_list("progress", flat=True).get(pk=row.pk) or {}
        _ended(row, RestoreStatus.FAILED, {**said, "error": said.get("error") or str(exc)[:500]})
        raise
    finally:
        if row.safety:
            inventory_refresh(host=row.host, operation=tracker.op, scope=Scope(datasets=[row.dataset]))
    if said.get("state") == "stopped":
        _ended(row, RestoreStatus.STOPPED, said)
        tracker.progress(100, "Stopped: the live copy is as it was; nothing half-copied is left.")
        return
    _ended(row, RestoreStatus.DONE, said)
    # no file name in an operation's words: a viewer reads operations, and file names are data (the restore's row,
    # an operator's to read, names it)
    where = "beside it (.restored-" + row.snapshot + ")" if row.how == How.BESIDE else "in place"
    tracker.progress(100, f"Restored restore {row.pk} from @{row.snapshot} {where}: {_counts(said)}.")


def _beside(raw_hex: str, snapshot: str) -> bytes:
    """The name a restore beside takes: the entry's own bytes, then .restored-<snapshot>."""
    return bytes.fromhex(raw_hex) + b".restored-" + snapshot.encode()


# what the operation says for each of tarn-restore's causes: never the file's name (the restore's row keeps the whole
# reason, for operators)
CAUSES = {
    "no-space": "no space left on the pool",
    "link": "a link was planted where it lands; nothing was written through it",
    "mounted": "a filesystem is mounted inside",
    "exists": "the name it would take exists already",
    "swapped": "its folder was swapped while it was made",
}


def _kind(said: dict) -> str:
    return CAUSES.get(
        said.get("cause", ""), "the NAS refused it (the reason is on the restore, Storage → Browse snapshots)"
    )


def _counts(said: dict) -> str:
    parts = [f"{said.get('files', 0)} files", f"{said.get('bytes', 0) >> 20} MiB"]
    if said.get("folders"):
        parts.insert(0, f"{said['folders']} folders")
    if said.get("links"):
        parts.append(f"{said['links']} links")
    if said.get("skipped"):
        parts.append(f"{said['skipped']} devices, FIFOs or sockets skipped")
    return ", ".join(parts)


def _follow(tracker: Tracker, t, row: Restore) -> dict:
    """Poll the unit's status until it ends (a stop asked is passed on); if following fails, the unit is stopped
    too, so no restore goes on that nobody follows."""
    polls, said = 0, {}
    try:
        while True:
            # quick at first and once the helper said its last word (a small restore ends in a second or two, and
            # its unit exits just after the word): a fixed 1 s poll was most of a small restore's overhead
            ended = said.get("state") in ("done", "stopped", "failed")
            time.sleep(0.1 if ended else (QUICK_SECONDS if polls < QUICK_POLLS else POLL_SECONDS))
            polls += 1
            if Restore.objects.filter(pk=row.pk, stop_requested=True).exists():
                restores.stop(t, row.pk)
            said = restores.progress(t, row.pk) or said
            if said:
                Restore.objects.filter(pk=row.pk).update(progress=said)
                total = said.get("total") or 0
                percent = min(99, 2 + int(97 * said.get("bytes", 0) / total)) if total else 2
                tracker.progress(percent, f"{said.get('state', 'copying')}: {_counts(said)}")
            if said.get("state") in ("done", "stopped", "failed") or polls % STATE_EVERY == 0:
                state, result = restores.state(t, row.pk)
                if state in ("inactive", "failed"):
                    said = restores.progress(t, row.pk) or said
                    Restore.objects.filter(pk=row.pk).update(progress=said)
                    restores.forget(t, row.pk)
                    if said.get("state") == "failed" or (
                        result not in ("", "success") and said.get("state") != "stopped"
                    ):
                        raise HostError(f"Restore {row.pk} failed: {_kind(said)}")
                    if said.get("state") not in ("done", "stopped"):
                        raise HostError(f"tarn-restore ended without a word ({state}, {result or 'no result'})")
                    return said
    except BaseException:
        try:
            restores.stop(t, row.pk)
        except HostError:
            pass
        raise


def safety_snapshots_prune(*, host, now=None):
    """The safety snapshots Tarn's own restores took, past SAFETY_KEEP_DAYS, destroyed as the Snapshots page would
    (one Operation, audited): only names a Restore row recorded (a snapshot an admin or a replication named alike is
    not Tarn's to destroy), still in the inventory, not held. None when there are none."""
    now = now or timezone.now()
    recorded = Restore.objects.filter(host=host, created_at__lt=now - timedelta(days=SAFETY_KEEP_DAYS))
    names = [n for n in recorded.exclude(safety="").values_list("safety", flat=True) if f"@{SAFETY_PREFIX}-" in n]
    old = pools.snapshots_unheld(host=host, names=names)
    return snapshot_destroy_start(host=host, user=None, snapshots=old) if old else None
