"""Key exports: the keys of a host's encryption roots (and old keys still kept) in one file sealed with a passphrase
chosen for it, downloaded once; and reading one back for an unlock."""

import json
from datetime import timedelta

import pyrage
from django.core.exceptions import ValidationError
from django.utils import timezone

from appliance import vault
from appliance.checks import confirmed, passphrase_confirmed
from appliance.models import Host, Operation
from appliance.operations import Tracker, operation_runner, operation_start
from appliance.vault import VaultError, unseal
from encryption.models import KeyExport, RetiredKey
from encryption.services.roots import _load, _roots, _sources
from hostlib import zfs
from hostlib.errors import CommandFailed
from pools import selectors as pools

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
    confirmed(confirm, expected, f"Type {expected} to export {'its key' if roots else 'every key'}.")
    passphrase_confirmed(export_passphrase, export_passphrase_confirm, field="export_passphrase")
    return operation_start(
        kind="encryption.export",
        host=host,
        user=user,
        subject="export",
        secret=export_passphrase,
        params={"roots": sorted(found), "every": not roots},
    )


@operation_runner("encryption.export", lock="encryption-export", reads=True)
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
    except pyrage.DecryptError as exc:
        if vault.age_work_refused(exc):
            raise ValidationError({field: vault.AGE_WORK_REFUSED}) from None
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
