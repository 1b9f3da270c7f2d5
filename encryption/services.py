"""Writes for native encryption: make an encrypted dataset or zvol, unlock encryption roots (one or many, with a dry
run that checks every key before anything loads), lock one. A passphrase or key travels only as the operation's
split secret (appliance.operations): never in its params, its messages, the audit log or Redis in clear; a hex or
raw key is kept on the NAS in a root-only key file and, if the admin chooses, escrowed sealed in Tarn."""

import json
import secrets
import time
from datetime import timedelta

import pyrage
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from appliance.models import Host, Operation
from appliance.operations import Tracker, operation_runner, operation_start
from appliance.services import host_for_changes
from appliance.vault import VaultError, seal, unseal
from encryption.choices import KeyFormat
from encryption.models import KeyEscrow, KeyExport, RetiredKey
from hostlib import nfs, samba, zfs
from hostlib.errors import Busy, CommandFailed
from pools import selectors as pools
from pools.services import Scope, inventory_refresh
from pools.services.commands import checked, new_dataset_name
from shares import selectors as shares


def _vault_ready() -> None:
    try:
        seal("check")
    except VaultError as exc:
        raise ValidationError({"escrow": str(exc)}) from None


# --- create -----------------------------------------------------------------------------------------------------
def encrypted_create_start(
    *,
    host: Host | None,
    user,
    name: str,
    keyformat: str = KeyFormat.PASSPHRASE,
    passphrase: str = "",
    passphrase_confirm: str = "",
    cipher: str = "aes-256-gcm",
    escrow: bool = False,
    volume_size: str | None = None,
    props: dict | None = None,
) -> Operation:
    """A new encryption root: a filesystem (or a zvol with volume_size) under an existing filesystem. A passphrase is
    handed to zfs on stdin and kept nowhere; a hex or raw key is made here, written to a root-only key file on the
    NAS (keylocation=file://…, so it unlocks at import) and escrowed sealed in Tarn if asked."""
    host = host_for_changes(host)
    props = props or {}
    if keyformat not in KeyFormat.values:
        raise ValidationError({"keyformat": f"Choose one of: {', '.join(KeyFormat.values)}."})
    checked(lambda: zfs.create_argv(name, props, volume_size=volume_size))
    keyfile = "" if keyformat == KeyFormat.PASSPHRASE else checked(lambda: zfs.key_file_for(name))
    key = zfs.NewKey(cipher=cipher, keyformat=keyformat, keyfile=keyfile)
    checked(lambda: zfs.create_argv(name, props, volume_size=volume_size, encryption=key))
    if keyformat == KeyFormat.PASSPHRASE:
        checked(lambda: zfs.check_passphrase(passphrase))
        if passphrase != passphrase_confirm:
            raise ValidationError({"passphrase_confirm": "The two passphrases differ."})
        secret = passphrase
    else:
        if escrow and passphrase:
            raise ValidationError({"passphrase": "A key is made by Tarn: leave the passphrase empty."})
        secret = secrets.token_hex(32)  # raw keys travel as hex too (zfs.key_input)
    new_dataset_name(host, name, "name")
    if escrow:
        if keyformat == KeyFormat.PASSPHRASE:
            raise ValidationError({"escrow": "Passphrases are never stored: only a hex or raw key is escrowed."})
        _vault_ready()
    with transaction.atomic():
        return operation_start(
            kind="encryption.create",
            host=host,
            user=user,
            subject=name,
            secret=secret,
            params={
                "name": name,
                "props": props,
                "volume_size": volume_size,
                "cipher": cipher,
                "keyformat": keyformat,
                "keyfile": keyfile,
                "escrow": bool(escrow),
            },
        )


@operation_runner("encryption.create", lock="dataset")
def encrypted_create_run(tracker: Tracker) -> None:
    op, p = tracker.op, tracker.op.params
    if not tracker.secret:
        raise ValidationError("The key did not reach the worker (the operation was queued twice?): nothing made.")
    t = tracker.transport()
    key = zfs.NewKey(cipher=p["cipher"], keyformat=p["keyformat"], keyfile=p["keyfile"])
    tracker.progress(20, f"Creating {p['name']} ({p['cipher']}, {p['keyformat']})")
    argv = zfs.create_argv(p["name"], p["props"], volume_size=p["volume_size"], encryption=key)
    zfs.create_keyed(t, argv, keyformat=key.keyformat, keyfile=key.keyfile, secret=tracker.secret)
    # The dataset exists: a row under its name from a dataset of that name before it is stale either way
    if p["escrow"]:
        KeyEscrow.objects.update_or_create(
            host=op.host, dataset=p["name"], defaults={"keyformat": p["keyformat"], "sealed": seal(tracker.secret)}
        )
    else:
        KeyEscrow.objects.filter(host=op.host, dataset=p["name"]).delete()
    if not p["volume_size"]:
        _seal(tracker, t, p["name"], remount=True, done=f"Created {p['name']}")
    tracker.progress(85, "Reading what changed")
    inventory_refresh(host=op.host, operation=op, scope=Scope(trees=[p["name"]]))
    kept = "escrowed in Tarn and " if p["escrow"] else ""
    where = f"; its key is {kept}in {key.keyfile} on the NAS: export it now" if key.keyfile else ""
    tracker.progress(100, f"Created {p['name']}, encrypted{where}")


def _seal(tracker: Tracker, t, name: str, *, remount: bool = False, done: str) -> None:
    """Seal name's mount folder (zfs.seal_mount_folder). A refusal (a link planted as the folder or on its way, a
    flag the kernel refused) fails the operation, saying what was done before it; nothing mounts through a link."""
    try:
        if said := zfs.seal_mount_folder(t, name, remount=remount):
            tracker.log(said)
    except zfs.MountFolderRefused as exc:
        inventory_refresh(host=tracker.op.host, operation=tracker.op, scope=Scope(trees=[name]))
        raise ValidationError(
            f"{done}, but {exc}. Remove the link (or whatever was planted there) before it is mounted: Tarn does not "
            "mount through a link."
        ) from None


# --- unlock -----------------------------------------------------------------------------------------------------
def _roots(host: Host, names: list[str], field: str = "roots") -> dict[str, dict]:
    """{root: its encryption as the inventory read it} for each name, which must be an encryption root."""
    known = {d.name: d.encryption for d in pools.encryption_roots(host=host)}
    if not names:
        raise ValidationError({field: "Choose at least one encrypted dataset."})
    unknown = [n for n in names if n not in known]
    if unknown:
        below = {d.name: d.encryption.get("root") for d in pools.encrypted_datasets(host=host)}
        hints = [f"{n} (its key is {below[n]}'s: unlock that)" if n in below else n for n in unknown]
        raise ValidationError({field: f"Not an encryption root on {host.name}: {', '.join(hints)}."})
    return {n: known[n] for n in names}


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


def _escrowed(host: Host, name: str) -> str | None:
    escrow = KeyEscrow.objects.filter(host=host, dataset=name).first()
    if escrow is None:
        return None
    try:
        return unseal(escrow.sealed)
    except VaultError as exc:
        raise ValidationError(f"{name}: its escrowed key cannot be opened here: {exc}") from None


def _sources(host: Host, name: str, enc: dict, given: str | None) -> list[str | None]:
    """The keys to try for name, in order: the one given; else its own key file on the NAS (None: zfs reads its
    keylocation), then the key Tarn keeps (a key file lost or replaced by hand still leaves that)."""
    if given:
        return [given]
    own = [None] if enc.get("location", "").startswith("file://") else []
    kept = _escrowed(host, name)
    return own + ([kept] if kept else [])


def _load(t, name: str, enc: dict, sources: list[str | None], *, dry_run: bool) -> str | None:
    """Load (or only check) name's key from the first source that fits; returns it (None: its key file). Raises
    KeyRejected when none fits; a source that fails otherwise (a key file gone) passes to the next."""
    failure: Exception = zfs.KeyRejected(name)
    for source in sources:
        try:
            zfs.load_key(t, name, keyformat=enc.get("format", ""), secret=source, dry_run=dry_run)
            return source
        except (zfs.KeyRejected, CommandFailed) as exc:
            failure = exc
    raise failure


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
    if any(shares.nfs_exports_under(host=op.host, datasets=p["roots"])):
        tracker.progress(85, "Exporting the NFS shares on them again")
        nfs.reexport(t)
    inventory_refresh(host=op.host, operation=op, scope=Scope(trees=p["roots"]))
    tracker.progress(100, f"Unlocked {', '.join(p['roots'])}")


# --- lock -------------------------------------------------------------------------------------------------------
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


# --- change key -------------------------------------------------------------------------------------------------
def change_key_start(
    *,
    host: Host | None,
    user,
    root: str,
    confirm: str = "",
    current_secret: str = "",
    keyformat: str = KeyFormat.PASSPHRASE,
    new_passphrase: str = "",
    new_passphrase_confirm: str = "",
    inherit: bool = False,
    escrow: bool = False,
) -> Operation:
    """Change an unlocked encryption root's key (the data is not re-encrypted). Admins only (the views say so), the
    root's name typed as confirm. The current key is confirmed first: typed (a passphrase root), else its key file
    or the key Tarn keeps. The new one: a passphrase (typed twice), a new hex or raw key Tarn makes (a new key file;
    escrowed if asked), or inherit: the root joins its parent's encryption root. The old key is retired, not
    destroyed (change_key_run)."""
    host = host_for_changes(host)
    enc = _roots(host, [root], "root")[root]
    if enc.get("key") != "available":
        raise ValidationError({"root": f"{root} is locked: unlock it first (change-key needs its key loaded)."})
    if confirm != root:
        raise ValidationError({"confirm": f"Type {root} to change its key."})
    escrowed = KeyEscrow.objects.filter(host=host, dataset=root).exists()
    if enc.get("format") == "passphrase" or not (enc.get("location", "").startswith("file://") or escrowed):
        if not current_secret:
            raise ValidationError({"current_secret": f"Type {root}'s current {enc.get('format')} first."})
    if current_secret:
        check = zfs.check_passphrase if enc.get("format") == "passphrase" else zfs.check_hex_key
        checked(lambda: check(current_secret, "current_secret"))
    if inherit:
        parent = root.rsplit("/", 1)[0]
        if "/" not in root or not any(d.name == parent for d in pools.encrypted_datasets(host=host)):
            raise ValidationError({"inherit": f"The parent {parent} is not encrypted: there is no key to inherit."})
        new = ""
    elif keyformat == KeyFormat.PASSPHRASE:
        checked(lambda: zfs.check_passphrase(new_passphrase, "new_passphrase"))
        if new_passphrase != new_passphrase_confirm:
            raise ValidationError({"new_passphrase_confirm": "The two passphrases differ."})
        if escrow:
            raise ValidationError({"escrow": "Passphrases are never stored: only a hex or raw key is escrowed."})
        new = new_passphrase
    elif keyformat in KeyFormat.values:
        new = secrets.token_hex(32)
        if escrow:
            _vault_ready()
    else:
        raise ValidationError({"keyformat": f"Choose one of: {', '.join(KeyFormat.values)}."})
    return operation_start(
        kind="encryption.change_key",
        host=host,
        user=user,
        subject=root,
        secret=json.dumps({"current": current_secret, "new": new}),
        params={"root": root, "keyformat": keyformat, "inherit": bool(inherit), "escrow": bool(escrow)},
    )


@operation_runner("encryption.change_key", lock="encryption")
def change_key_run(tracker: Tracker) -> None:
    op, p = tracker.op, tracker.op.params
    given = json.loads(tracker.secret or "{}")
    root, t = p["root"], tracker.transport()
    enc = next((d.encryption for d in pools.encryption_roots(host=op.host) if d.name == root), {})
    old_file = enc.get("location", "").removeprefix("file://")
    tracker.progress(10, f"Checking {root}'s current key")
    try:
        _load(t, root, enc, _sources(op.host, root, enc, given.get("current")), dry_run=True)
    except (zfs.KeyRejected, CommandFailed):
        raise ValidationError(f"The current key does not fit {root}: nothing was changed.") from None
    new_file = ""
    sealed = seal(given["new"]) if p["escrow"] and given.get("new") else ""  # before the key changes: no half-done
    old_escrow = KeyEscrow.objects.filter(host=op.host, dataset=root).first()
    if p["inherit"]:
        tracker.progress(40, f"{root} inherits its parent's key")
        zfs.change_key(t, root, inherit=True)
    elif p["keyformat"] == KeyFormat.PASSPHRASE:
        tracker.progress(40, f"A new passphrase for {root}")
        zfs.change_key(t, root, keyformat=p["keyformat"], secret=given["new"])
    else:  # a new key file beside the old one first: the old stays valid until zfs has taken the new
        new_file = zfs.key_file_for(root)
        tracker.progress(30, f"Writing the new key file {new_file}")
        zfs.key_write(t, new_file, p["keyformat"], given["new"])
        zfs.change_key(t, root, keyformat=p["keyformat"], keyfile=new_file)
    kept_file = old_file if old_file.startswith(zfs.KEY_DIR + "/") and old_file != new_file else ""
    with transaction.atomic():
        if old_escrow or kept_file:  # the old key stays until an admin removes it: nothing typed destroys it
            RetiredKey.objects.create(
                host=op.host,
                dataset=root,
                keyformat=old_escrow.keyformat if old_escrow else enc.get("format", ""),
                sealed=old_escrow.sealed if old_escrow else "",
                keyfile=kept_file,
                retired_by=op.user,
            )
        if sealed and new_file:
            KeyEscrow.objects.update_or_create(
                host=op.host, dataset=root, defaults={"keyformat": p["keyformat"], "sealed": sealed}
            )
        else:
            KeyEscrow.objects.filter(host=op.host, dataset=root).delete()  # it opened the old key only
    if old_escrow or kept_file:
        where = " and ".join(w for w in ["sealed in Tarn" if old_escrow else "", kept_file] if w)
        tracker.log(f"The old key is kept ({where}) until an admin removes it (Encryption page, Retired keys)")
    inventory_refresh(host=op.host, operation=op, scope=Scope(trees=[root]))
    how = "inherits its parent's key" if p["inherit"] else f"has a new {p['keyformat']}"
    tracker.progress(100, f"{root} {how}" + (f" (key file {new_file}: export it now)" if new_file else ""))


# --- old keys ---------------------------------------------------------------------------------------------------
def retired_key_remove_start(*, user, key: RetiredKey, confirm: str) -> Operation:
    """Remove an old key a change of key left (admins only, the views say so; the dataset's name typed): its sealed
    copy in Tarn and its key file on the NAS. Whatever only it opens (a replica sent before the change) is then
    lost for good."""
    host = host_for_changes(key.host)
    if confirm != key.dataset:
        raise ValidationError({"confirm": f"Type {key.dataset} to remove its old key."})
    return operation_start(
        kind="encryption.retired_remove",
        host=host,
        user=user,
        subject=key.dataset,
        params={"id": key.pk, "dataset": key.dataset, "keyfile": key.keyfile},
    )


@operation_runner("encryption.retired_remove", lock="encryption")
def retired_key_remove_run(tracker: Tracker) -> None:
    op, p = tracker.op, tracker.op.params
    key = RetiredKey.objects.filter(pk=p["id"], host=op.host).first()
    if key is None:
        raise ValidationError(f"That old key of {p['dataset']} was removed already.")
    if key.keyfile:
        location = f"file://{checked(lambda: zfs.check_key_file(key.keyfile))}"
        in_use = [d.name for d in pools.encryption_roots(host=op.host) if d.encryption.get("location") == location]
        if in_use:  # set back by hand: it is a current key again
            raise ValidationError(f"{key.keyfile} is the key file of {', '.join(in_use)} now: nothing was removed.")
        removed = tracker.transport().remove_file(key.keyfile)
        tracker.log(f"{'Removed' if removed else 'Already gone:'} {key.keyfile}")
    key.delete()
    tracker.progress(100, f"Removed an old key of {p['dataset']}")


# --- key export -------------------------------------------------------------------------------------------------
EXPORT_FORMAT = "tarn-key-export/1"
EXPORT_KEPT = timedelta(hours=24)  # an export not downloaded by then is deleted (and never offered)


def keys_export_start(
    *, host: Host | None, user, roots: list[str], confirm: str, export_passphrase: str, export_passphrase_confirm: str
) -> Operation:
    """Export the keys of these encryption roots (all of the host's when roots is empty) as one file, encrypted with
    a passphrase chosen for it. Admins only (the view says so); confirm: the host's name typed (all keys) or the
    dataset's (one)."""
    if host is None:
        raise ValidationError("Add a host first (Hosts → Add host).")
    found = _roots(host, roots) if roots else {d.name: d.encryption for d in pools.encryption_roots(host=host)}
    if not found:
        raise ValidationError({"roots": f"{host.name} has no encrypted dataset."})
    expected = roots[0] if len(roots) == 1 else host.name
    if confirm != expected:
        raise ValidationError({"confirm": f"Type {expected} to export {'its key' if roots else 'every key'}."})
    checked(lambda: zfs.check_passphrase(export_passphrase, "export_passphrase"))
    if export_passphrase != export_passphrase_confirm:
        raise ValidationError({"export_passphrase_confirm": "The two passphrases differ."})
    return operation_start(
        kind="encryption.export",
        host=host,
        user=user,
        subject="export",
        secret=export_passphrase,
        params={"roots": sorted(found), "every": not roots},
    )


@operation_runner("encryption.export", lock="encryption-export")
def keys_export_run(tracker: Tracker) -> None:
    op, p = tracker.op, tracker.op.params
    t = tracker.transport(read_only=True)
    roots = {d.name: d.encryption for d in pools.encryption_roots(host=op.host) if d.name in p["roots"]}
    keys, left_out = {}, []
    for name, enc in sorted(roots.items()):
        location = enc.get("location", "")
        if enc.get("format") == "passphrase":
            left_out.append(f"{name}: a passphrase Tarn does not keep")
            continue
        try:  # the key that opens it now (checked with load-key -n): its key file's, else the one Tarn keeps
            key = _load(t, name, enc, _sources(op.host, name, enc, None), dry_run=True)
            if key is None:
                key = zfs.key_read(t, location.removeprefix("file://"))
        except (zfs.KeyRejected, CommandFailed, ValueError) as exc:
            left_out.append(f"{name}: no key Tarn can reach opens it ({str(exc)[:120]})")
            continue
        keys[name] = {"keyformat": enc.get("format"), "key": key, "keylocation": location, "cipher": enc.get("cipher")}
    retired = _retired_keys(t, op.host, None if p.get("every") else p["roots"], left_out)
    if not keys and not retired:
        raise ValidationError("No key to export: " + "; ".join(left_out))
    document = {"format": EXPORT_FORMAT, "host": op.host.name, "created": timezone.now().isoformat(), "keys": keys}
    document["retired"] = retired  # old keys a change of key left (kept until an admin removes them)
    data = pyrage.passphrase.encrypt(json.dumps(document, indent=1).encode(), tracker.secret)
    key_exports_prune()
    export = KeyExport.objects.create(host=op.host, user=op.user, roots=sorted(keys), left_out=left_out, data=data)
    old = f" and {sum(map(len, retired.values()))} old keys" if retired else ""
    tracker.progress(
        100, f"{len(keys)} keys{old} exported: download the file from the Encryption page (export {export.pk})"
    )


def _retired_keys(t, host: Host, roots: list[str] | None, left_out: list[str]) -> dict[str, list[dict]]:
    """{dataset: [its old keys, newest first]} of these roots (None: every one the host has), for an export; an old
    key Tarn cannot read goes to left_out."""
    found: dict[str, list[dict]] = {}
    kept = RetiredKey.objects.filter(host=host)
    for old in kept if roots is None else kept.filter(dataset__in=roots):
        try:
            key = unseal(old.sealed) if old.sealed else zfs.key_read(t, old.keyfile)
        except (VaultError, CommandFailed, ValueError) as exc:
            left_out.append(f"{old.dataset}: an old key Tarn cannot read ({str(exc)[:120]})")
            continue
        entry = {"keyformat": old.keyformat, "key": key, "retired": old.retired_at.isoformat()}
        found.setdefault(old.dataset, []).append(entry)
    return found


def key_exports_prune() -> int:
    """Delete the key exports not downloaded within EXPORT_KEPT (beat, hourly; and before each new export)."""
    deleted, _ = KeyExport.objects.filter(created_at__lt=timezone.now() - EXPORT_KEPT).delete()
    return deleted


def key_export_take(*, export: KeyExport) -> tuple[str, bytes]:
    """The export's file, once: the row goes as it is handed over."""
    name, data = export.filename, bytes(export.data)
    taken, _ = KeyExport.objects.filter(pk=export.pk).delete()
    if not taken:  # two downloads at once: only one gets it
        raise ValidationError("This export was downloaded already: make another.")
    return name, data


def _is_hex_key(value) -> bool:
    return isinstance(value, str) and zfs.HEX_KEY.fullmatch(value) is not None


def keys_from_export(*, data: bytes, passphrase: str, field: str = "key_file") -> dict[str, str]:
    """{root: key} from an uploaded key export (the file and the passphrase it was made with)."""
    try:
        document = json.loads(pyrage.passphrase.decrypt(data, passphrase))
    except pyrage.DecryptError:
        raise ValidationError({field: "This file does not open with that passphrase."}) from None
    except ValueError:
        raise ValidationError({field: "Not a Tarn key export."}) from None
    if not isinstance(document, dict) or document.get("format") != EXPORT_FORMAT:
        raise ValidationError({field: "Not a Tarn key export."})
    keys = document.get("keys")
    if not isinstance(keys, dict) or not all(
        isinstance(name, str) and isinstance(entry, dict) and _is_hex_key(entry.get("key"))
        for name, entry in keys.items()
    ):
        raise ValidationError({field: "This key export is damaged: its keys are not as Tarn writes them."})
    return {name: entry["key"] for name, entry in keys.items()}
