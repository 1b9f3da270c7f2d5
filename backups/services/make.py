"""Making backups (on demand, on a schedule, before a restore), keeping N, pushing a copy to a NAS, deleting one.
The work runs as Operations on the default queue, whose workers run as root: they read the secrets a backup holds
(the vault's identity, the SSH key), which the web cannot, and they alone write in DATA_DIR/backups."""

import json
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.utils import timezone

from appliance import vault
from appliance.checks import confirmed, passphrase_confirmed
from appliance.connect import ssh_dir, ssh_identity
from appliance.models import Host, Operation
from appliance.operations import Tracker, operation_runner, operation_start
from backups import archive, database, signing
from backups.choices import NAS_FOLDER, PASSPHRASE_MAX, PASSPHRASE_MIN, PRE_RESTORE_KEEP, SUFFIX, Origin
from backups.models import Backup, BackupSchedule
from backups.services import files
from hostlib import backups as nas
from hostlib import zfs
from hostlib.errors import HostError


def _passphrase_rule(passphrase: str, field: str) -> None:
    """A passphrase that seals backups: 12 to 1,024 characters, and one line as every passphrase Tarn takes
    (hostlib.zfs.check_one_line: no line break, no NUL)."""
    if not passphrase:
        raise ValidationError({field: "Give a passphrase."})
    if not PASSPHRASE_MIN <= len(passphrase) <= PASSPHRASE_MAX:
        raise ValidationError({field: f"{PASSPHRASE_MIN} to {PASSPHRASE_MAX} characters."})
    zfs.check_one_line(passphrase, field)


def check_passphrase(passphrase: str, confirm: str | None = None, field: str = "passphrase") -> None:
    """A passphrase for backups (_passphrase_rule), typed the same twice when confirm is given."""
    passphrase_confirmed(passphrase, confirm, field=field, rule=_passphrase_rule)


def backup_start(*, user, passphrase: str, passphrase_confirm: str, include_series: bool = False) -> Operation:
    """A backup now, sealed with this passphrase (which goes to the worker as an operation secret, split)."""
    check_passphrase(passphrase, passphrase_confirm)
    backups_possible()
    return operation_start(
        kind="backups.backup",
        host=None,
        user=user,
        secret=passphrase,
        params={"origin": Origin.MANUAL, "include_series": bool(include_series)},
    )


def backups_possible() -> None:
    try:
        database._live()
    except database.DatabaseError as exc:
        raise ValidationError(str(exc)) from None


@operation_runner("backups.backup", lock="config", queue="default")
def backup_run(tracker: Tracker) -> None:
    p = tracker.op.params
    schedule = BackupSchedule.objects.first()
    if p["origin"] == Origin.SCHEDULED:
        if schedule is None or not schedule.recipient:
            raise ValidationError("The schedule has no passphrase set: set one on the Backups page.")
        recipient, wrapped = schedule.recipient, schedule.wrapped_key
    else:
        if not tracker.secret:
            raise ValidationError("The passphrase did not reach the worker (the queue restarted?): start it again.")
        recipient, wrapped = archive.new_key(tracker.secret)
    tracker.progress(10, "Copying the database and the secrets")
    backup = backup_make(
        origin=p["origin"], user=tracker.op.user, recipient=recipient, wrapped=wrapped, series=p["include_series"]
    )
    tracker.progress(70, f"Written: {backup.name} ({backup.size // 1024} KiB)")
    keep = schedule.keep if schedule else 7
    removed = retention(keep=keep)
    push_host = schedule.push_host if schedule else None
    if push_host is not None and p["origin"] in (Origin.SCHEDULED, Origin.MANUAL):
        tracker.progress(80, f"Pushing it to {push_host.name}")
        push(tracker, backup, push_host, keep=keep)
    note = f"; {len(removed)} older removed (keep {keep})" if removed else ""
    pushed = f"; a copy on {push_host.name}" if backup.pushed_to_id else ""
    tracker.progress(100, f"Backup {backup.name} made ({files.size(backup.size)}){note}{pushed}.")


def backup_make(*, origin: str, user, recipient: str, wrapped: str, series: bool, using: str = "default") -> Backup:
    """Write a backup of the live state, signed by this Tarn (backups.signing); its row goes to the database `using`
    (the restored one, for the state kept before a restore)."""
    members = secrets_now()
    members[archive.DATABASE] = database.snapshot(include_series=series)
    now = timezone.now()
    name = files.new_name("tarn")
    manifest = _manifest(user=user, at=now, series=series, origin=origin)
    members[archive.MANIFEST] = json.dumps(manifest, indent=1, sort_keys=True).encode()
    members[archive.SIGNATURE] = signing.sign(members)
    data = archive.seal(members, recipient=recipient, wrapped=wrapped)
    files.write(name, data)
    return Backup.objects.using(using).create(
        name=name,
        origin=origin,
        user_id=user.pk if user and user_exists(using, user.pk) else None,
        size=len(data),
        sha256=archive.digest(data),
        manifest=manifest,
    )


def user_exists(using: str, user_id) -> bool:
    return get_user_model().objects.using(using).filter(pk=user_id).exists()


def secrets_now() -> dict[str, bytes]:
    """The install's secrets: the secret key, the vault's key pair, the SSH key pair (made now if missing), each
    read from a checked key folder (appliance.datadir)."""
    identity = vault.ensure_identity()
    key = ssh_identity()
    files_ = {
        archive.VAULT_IDENTITY: identity,
        archive.VAULT_RECIPIENT: vault.vault_dir() / "recipient.txt",
        archive.SSH_KEY: key,
        archive.SSH_PUBLIC: ssh_dir() / "id_ed25519.pub",
    }
    found = {name: Path(path).read_bytes() for name, path in files_.items()}
    found[archive.SECRET_KEY] = settings.SECRET_KEY.encode()
    return found


def install_id() -> str:
    """Which install a backup is of: a short digest of its vault's public key (the same after a restore)."""
    path = vault.vault_dir() / "recipient.txt"
    return archive.digest(path.read_bytes().strip())[:12] if path.exists() else ""


def _manifest(*, user, at, series: bool, origin: str) -> dict:
    hosts = list(Host.objects.order_by("name").values_list("name", flat=True))
    return {
        "format": archive.FORMAT,
        "tarn_version": settings.TARN_VERSION,
        "created_at": at.isoformat(),
        "created_by": getattr(user, "username", "") or "schedule",
        "origin": origin,
        "install": install_id(),
        "database": "sqlite",
        "series": series,
        "migrations": database.migration_state(),
        "hosts": hosts,
        "counts": _counts(),
    }


def _counts() -> dict:
    from django.apps import apps  # noqa: PLC0415 - the registry, read when asked

    wanted = {
        "users": "appliance.User",
        "hosts": "appliance.Host",
        "datasets": "pools.Dataset",
        "smb_shares": "shares.SmbShare",
        "nfs_exports": "shares.NfsExport",
        "snapshot_tasks": "pools.SnapshotTask",
        "replication_tasks": "replication.Task",
        "benchmark_runs": "benchmarks.Run",
        "alert_channels": "analytics.Channel",
        "audit_entries": "appliance.AuditEntry",
    }
    return {key: apps.get_model(label).objects.count() for key, label in wanted.items()}


def retention(*, keep: int) -> list[str]:
    """Keep the newest `keep` backups made here (on demand or scheduled) and the last few kept before a restore;
    remove the others, files and rows (a row whose name is not one Tarn gives goes without touching any file)."""
    removed = []
    kept = Backup.objects.filter(origin__in=(Origin.MANUAL, Origin.SCHEDULED)).order_by("-created_at", "-id")
    before = Backup.objects.filter(origin=Origin.PRE_RESTORE).order_by("-created_at", "-id")
    for backup in [*kept[keep:], *before[PRE_RESTORE_KEEP:]]:
        files.remove(backup)
        removed.append(backup.name)
        backup.delete()
    return removed


def push(tracker: Tracker, backup: Backup, host: Host, *, keep: int) -> None:
    """A copy on the NAS (root only), and the NAS's copies beyond keep removed. A failure is kept on the row and
    raised for the schedule's alert; the local backup stands."""
    try:
        t = tracker.transport(host)
        nas.keep(t, NAS_FOLDER, backup.name, files.read(backup), keep=keep, suffix=SUFFIX)
    except HostError as exc:
        Backup.objects.filter(pk=backup.pk).update(push_error=str(exc)[:500])
        raise HostError(f"Backup {backup.name} was made here, but pushing it to {host.name} failed: {exc}") from None
    backup.pushed_to = host
    Backup.objects.filter(pk=backup.pk).update(pushed_to=host, push_error="")


def backup_delete_start(*, backup: Backup, confirm: str, user=None) -> Operation:
    """Delete a backup (its name typed): a worker removes the file, as only root writes in DATA_DIR/backups."""
    confirmed(confirm, backup.name, f"Type {backup.name} to delete this backup.")
    return operation_start(
        kind="backups.delete", host=None, user=user, params={"backup": backup.pk, "name": backup.name}
    )


@operation_runner("backups.delete", lock="config", queue="default")
def delete_run(tracker: Tracker) -> None:
    backup = Backup.objects.filter(pk=tracker.op.params["backup"]).first()
    if backup is None:
        tracker.progress(100, f"{tracker.op.params['name']} was already deleted.")
        return
    had_file = files.remove(backup)
    backup.delete()
    tracker.progress(100, f"Deleted {backup.name}{'' if had_file else ' (its file was already gone)'}.")
