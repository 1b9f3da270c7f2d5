"""Make an encrypted dataset or zvol: a new encryption root under an existing filesystem, its key typed (a passphrase)
or made here (a hex or raw key in a root-only key file on the NAS, escrowed sealed in Tarn if asked)."""

from django.core.exceptions import ValidationError
from django.db import transaction

from appliance.checks import checked, new_key
from appliance.models import Host, Operation
from appliance.operations import Tracker, operation_runner, operation_start
from appliance.services import host_for_changes
from appliance.vault import seal
from encryption.choices import KeyFormat
from encryption.models import KeyEscrow
from encryption.services.roots import _seal, _vault_ready
from hostlib import zfs
from pools.services import Scope, inventory_refresh, new_dataset_name


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
    pbkdf2iters: int | None = None,
) -> Operation:
    """A new encryption root: a filesystem (or a zvol with volume_size) under an existing filesystem. A passphrase is
    handed to zfs on stdin and kept nowhere; a hex or raw key is made here, written to a root-only key file on the
    NAS (keylocation=file://…, so it unlocks at import) and escrowed sealed in Tarn if asked."""
    host = host_for_changes(host)
    props = props or {}
    if keyformat not in KeyFormat.values:
        raise ValidationError({"keyformat": f"Choose one of: {', '.join(KeyFormat.values)}."})
    checked(lambda: zfs.create_argv(name, props, volume_size=volume_size))
    if keyformat != KeyFormat.PASSPHRASE and escrow and passphrase:
        raise ValidationError({"passphrase": "A key is made by Tarn: leave the passphrase empty."})
    key, secret = new_key(
        name=name,
        keyformat=keyformat,
        passphrase=passphrase,
        passphrase_confirm=passphrase_confirm,
        cipher=cipher,
        pbkdf2iters=pbkdf2iters,
    )
    checked(lambda: zfs.create_argv(name, props, volume_size=volume_size, encryption=key))
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
                "keyfile": key.keyfile,
                "pbkdf2iters": key.pbkdf2iters,
                "escrow": bool(escrow),
            },
        )


@operation_runner("encryption.create", lock="dataset")
def encrypted_create_run(tracker: Tracker) -> None:
    op, p = tracker.op, tracker.op.params
    if not tracker.secret:
        raise ValidationError("The key did not reach the worker (the operation was queued twice?): nothing made.")
    t = tracker.transport()
    key = zfs.NewKey(
        cipher=p["cipher"], keyformat=p["keyformat"], keyfile=p["keyfile"], pbkdf2iters=p.get("pbkdf2iters", 0)
    )
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
