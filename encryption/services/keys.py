"""Change an encryption root's key (a new passphrase, a new key file, or its parent's key), and remove an old key a
change left (kept until an admin removes it)."""

import json
import secrets

from django.core.exceptions import ValidationError
from django.db import transaction

from appliance.checks import checked, confirmed, passphrase_confirmed
from appliance.models import Host, Operation
from appliance.operations import Tracker, operation_runner, operation_start
from appliance.services import host_for_changes
from appliance.vault import seal
from encryption.choices import KeyFormat
from encryption.models import KeyEscrow, RetiredKey
from encryption.services.roots import _load, _roots, _sources, _vault_ready
from hostlib import zfs
from hostlib.errors import CommandFailed
from pools import selectors as pools
from pools.services import Scope, inventory_refresh


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
    pbkdf2iters: int | None = None,
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
    confirmed(confirm, root, f"Type {root} to change its key.")
    escrowed = KeyEscrow.objects.filter(host=host, dataset=root).exists()
    if enc.get("format") == "passphrase" or not (enc.get("location", "").startswith("file://") or escrowed):
        if not current_secret:
            raise ValidationError({"current_secret": f"Type {root}'s current {enc.get('format')} first."})
    if current_secret:
        check = zfs.check_passphrase if enc.get("format") == "passphrase" else zfs.check_hex_key
        checked(lambda: check(current_secret, "current_secret"))
    rounds = 0 if inherit else pbkdf2iters or 0
    checked(lambda: zfs.pbkdf2_options(keyformat, rounds))
    if inherit:
        parent = root.rsplit("/", 1)[0]
        if "/" not in root or not any(d.name == parent for d in pools.encrypted_datasets(host=host)):
            raise ValidationError({"inherit": f"The parent {parent} is not encrypted: there is no key to inherit."})
        new = ""
    elif keyformat == KeyFormat.PASSPHRASE:
        passphrase_confirmed(new_passphrase, new_passphrase_confirm, field="new_passphrase")
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
        params={
            "root": root,
            "keyformat": keyformat,
            "inherit": bool(inherit),
            "escrow": bool(escrow),
            "pbkdf2iters": rounds,
        },
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
        zfs.change_key(t, root, keyformat=p["keyformat"], secret=given["new"], pbkdf2iters=p.get("pbkdf2iters", 0))
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
    confirmed(confirm, key.dataset, f"Type {key.dataset} to remove its old key.")
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
