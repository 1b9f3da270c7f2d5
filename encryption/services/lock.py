"""Lock an encryption root: its SMB sessions closed (only when forced), its shares and exports off, its filesystems
unmounted and its key unloaded."""

import time

from django.core.exceptions import ValidationError

from appliance.models import Host, Operation
from appliance.operations import Tracker, operation_runner, operation_start
from appliance.services import host_for_changes
from encryption.services.roots import _roots, _seal
from hostlib import nfs, samba, zfs
from hostlib.errors import Busy
from pools import selectors as pools
from pools.dependents import release
from pools.services import Scope, inventory_refresh
from shares import selectors as shares


def lock_start(*, host: Host | None, user, root: str, force: bool = False) -> Operation:
    """Lock an encryption root: its SMB shares' sessions must be closed (or force closes them), its filesystems
    unmount and its key unloads. Refused while busy unless forced."""
    host = host_for_changes(host)
    enc = _roots(host, [root], "root")[root]
    if enc.get("key") != "available":
        raise ValidationError({"root": f"{root} is locked already."})
    return operation_start(
        kind="encryption.lock", host=host, user=user, subject=root, params={"root": root, "force": bool(force)}
    )


def lock_plan(*, host: Host, root: str) -> list[str]:
    """What locking root stops: its SMB shares and NFS exports (the page says it before the admin confirms)."""
    return shares.share_users_of(host=host, dataset=root)


@operation_runner("encryption.lock", lock="encryption")
def lock_run(tracker: Tracker) -> None:
    op, p = tracker.op, tracker.op.params
    root, t = p["root"], tracker.transport()
    names = shares.smb_share_names_under(host=op.host, dataset=root)
    open_ = [s for s in samba.sessions(t) if set(s.shares) & set(names)] if names else []
    if open_ and not p["force"]:
        who = ", ".join(f"{s.user}@{s.machine} on {'/'.join(sorted(set(s.shares) & set(names)))}" for s in open_)
        raise ValidationError(
            f"{root} has open SMB sessions ({who}): nothing was locked. Lock with force to close them."
        )
    for name in names if p["force"] else []:
        tracker.log(f"Closing SMB share {name}")
        samba.close_share(t, name)
    exported = shares.nfs_exports_under(host=op.host, datasets=[root])
    if exported:
        stopped = nfs.unexport(t, exported)
        tracker.log(f"NFS exports stopped: {', '.join(stopped) or 'none were exported'}")
    for label in release(host=op.host, t=t, roots=[root], locking=True):
        tracker.log(f"{label}: offline")
    tracker.progress(40, f"Unmounting {root} and what is below it")
    head = next((d for d in pools.encryption_roots(host=op.host) if d.name == root), None)
    try:
        if head is not None and pools.is_mounted(head):
            _unmount(t, root, force=p["force"], waited=NFS_LET_GO if exported else 0)
        else:  # a zvol, or a filesystem that is not mounted (canmount=off, mountpoint=none): only the key goes
            zfs.unload_key(t, root)
    except Busy as exc:
        if exported:
            nfs.reexport(t)  # nothing was locked: its exports come back
        release(host=op.host, t=t, roots=[root], locking=False)  # …and its LUNs
        raise ValidationError(
            f"{root} is busy ({exc}): nothing was locked. Lock with force to stop what uses it."
        ) from None
    _seal(tracker, t, root, done=f"Locked {root} (its key is unloaded and its shares are off)")
    inventory_refresh(host=op.host, operation=op, scope=Scope(trees=[root]))
    tracker.progress(100, f"Locked {root}: its key is unloaded and its shares are off")


NFS_LET_GO = 15  # seconds: nfsd lets go of a filesystem a moment after its export is dropped (later when loaded)


def _unmount(t, root: str, *, force: bool, waited: float) -> None:
    """Unmount root's tree and unload its key; while `waited` seconds have not passed, a busy answer is asked
    again each second (the exports just dropped: nfsd holds the filesystem a little longer)."""
    deadline = time.monotonic() + waited
    while True:
        try:
            zfs.unmount_tree(t, root, force=force, unload=True)
            return
        except Busy:
            if time.monotonic() >= deadline:
                raise
            time.sleep(1)
