"""Encryption roots as the inventory read them, and the keys that open them: the one given, the root's key file on the
NAS or the key Tarn keeps (escrowed, sealed); the vault that seals those; and a mount folder sealed (nothing mounts
through a link)."""

from django.core.exceptions import ValidationError

from appliance.models import Host
from appliance.operations import Tracker
from appliance.vault import VaultError, seal, unseal
from encryption.models import KeyEscrow
from hostlib import zfs
from hostlib.errors import CommandFailed
from pools import selectors as pools
from pools.services import Scope, inventory_refresh


def _vault_ready() -> None:
    try:
        seal("check")
    except VaultError as exc:
        raise ValidationError({"escrow": str(exc)}) from None


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
