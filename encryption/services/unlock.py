"""Unlock encryption roots, one or many, all or nothing (a dry run checks every key before anything loads); their
filesystems mount and their NFS exports come back."""

import json

from django.core.exceptions import ValidationError

from appliance.checks import checked
from appliance.models import Host, Operation
from appliance.operations import Tracker, operation_runner, operation_start
from appliance.services import host_for_changes
from encryption.models import KeyEscrow
from encryption.services.roots import _load, _roots, _sources
from hostlib import nfs, zfs
from hostlib.errors import CommandFailed
from pools import selectors as pools
from pools.dependents import release
from pools.services import Scope, inventory_refresh
from shares import selectors as shares


def unlock_start(
    *, host: Host | None, user, roots: list[str], secret: str = "", keys: dict | None = None, dry_run: bool = False
) -> Operation:
    """Unlock encryption roots, all or nothing: each key loads only if it fits (zfs checks it), and if one does not,
    the ones loaded are unloaded again and nothing mounts; dry_run only checks (load-key -n). Then their
    filesystems mount and the NFS exports on them come back (SMB shares come back by themselves: smbd offers a
    share only while its path is a mounted filesystem). secret: one passphrase or hex key for all (zfs.typed_secret:
    when typed, it is the key, never passed over); keys: {root: key} from an uploaded key export; neither: each
    root's key file on the NAS or its escrowed key."""
    host = host_for_changes(host)
    found = _roots(host, roots)
    if not dry_run:
        unlocked = [n for n, e in found.items() if e.get("key") == "available"]
        if unlocked:
            raise ValidationError({"roots": f"Already unlocked: {', '.join(unlocked)}."})
    formats = {n: e.get("format", "") for n, e in found.items()}
    typed = checked(lambda: zfs.typed_secret(formats, secret))  # a typed key is the key or an error, never ignored
    given = {n: (keys or {}).get(n) or typed.get(n, "") for n in found}
    escrowed = set(KeyEscrow.objects.filter(host=host, dataset__in=list(found)).values_list("dataset", flat=True))
    for name, enc in found.items():
        if given[name]:  # an export's keys are checked as the typed one is
            check = zfs.check_passphrase if enc.get("format") == "passphrase" else zfs.check_hex_key
            checked(lambda v=given[name], c=check: c(v, "secret"))
        elif not enc.get("location", "").startswith("file://") and name not in escrowed:
            raise ValidationError(
                {"secret": f"{name} needs its {enc.get('format') or 'key'} (Tarn does not keep it): type it."}
            )
    bundle = json.dumps({n: v for n, v in given.items() if v}) if any(given.values()) else ""
    return operation_start(
        kind="encryption.unlock",
        host=host,
        user=user,
        subject=",".join(sorted(found))[:200],
        secret=bundle or None,
        params={"roots": sorted(found), "dry_run": dry_run},
    )


@operation_runner("encryption.unlock", lock="encryption")
def unlock_run(tracker: Tracker) -> None:
    op, p = tracker.op, tracker.op.params
    given = json.loads(tracker.secret) if tracker.secret else {}
    t = tracker.transport()
    roots = {d.name: d for d in pools.encryption_roots(host=op.host) if d.name in p["roots"]}
    for name in [] if p["dry_run"] else [n for n in p["roots"] if n in roots and roots[n].type == "filesystem"]:
        try:  # before any key loads: a mount would follow a link planted on the way to a mount folder
            zfs.check_mount_folders(t, name)
        except zfs.MountFolderRefused as exc:
            raise ValidationError(f"{exc}: nothing was unlocked. Remove the link, then unlock again.") from None
    loaded, wrong = [], []
    for i, name in enumerate(p["roots"]):
        verb = "Checking the key of" if p["dry_run"] else "Loading the key of"
        tracker.progress(int(60 * i / len(p["roots"])), f"{verb} {name}")
        enc = roots[name].encryption if name in roots else {}
        try:  # a key that does not fit loads nothing: zfs checks it first either way
            _load(t, name, enc, _sources(op.host, name, enc, given.get(name)), dry_run=p["dry_run"])
            loaded.append(name)
        except zfs.KeyRejected:
            wrong.append(name)
        except CommandFailed as exc:
            wrong.append(f"{name} ({str(exc)[:160]})")
    for name in loaded:
        tracker.log(f"{name}: the key fits")
    if wrong:
        for name in [] if p["dry_run"] else loaded:  # all or nothing: the ones that fit are unloaded again
            zfs.unload_key(t, name)
        raise ValidationError(f"The key does not fit {', '.join(wrong)}: nothing was unlocked.")
    if p["dry_run"]:
        tracker.progress(100, f"Dry run: the key fits {', '.join(loaded)}; nothing was unlocked")
        return
    for i, name in enumerate(p["roots"]):
        if name in roots and roots[name].type == "filesystem":  # a zvol has nothing to mount
            tracker.progress(60 + int(25 * i / len(p["roots"])), f"Mounting {name} and what is below it")
            zfs.mount_tree(t, name)
    for label in release(host=op.host, t=t, roots=p["roots"], locking=False):
        tracker.log(f"{label}: back")
    if any(shares.nfs_exports_under(host=op.host, datasets=p["roots"])):
        tracker.progress(85, "Exporting the NFS shares on them again")
        nfs.reexport(t)
    inventory_refresh(host=op.host, operation=op, scope=Scope(trees=p["roots"]))
    tracker.progress(100, f"Unlocked {', '.join(p['roots'])}")
