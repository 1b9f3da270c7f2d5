"""Configuration backups: made (on demand, on a schedule, before a restore), kept (DATA_DIR/backups, keep N, and on a
NAS), checked (the dry run's diff) and restored. The work runs as Operations on the default queue, whose workers
run as root: they read the secrets a backup holds (the vault's identity, the SSH key), which the web cannot."""

import json
import os
import secrets
import tempfile
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from appliance import vault
from appliance.choices import AuditKind, OperationStatus
from appliance.connect import ssh_dir
from appliance.models import AuditEntry, Host, Operation
from appliance.operations import Tracker, operation_runner, operation_start
from backups import archive, database
from backups.choices import KEEP_MAX, NAS_FOLDER, PASSPHRASE_MAX, PASSPHRASE_MIN, PRE_RESTORE_KEEP, SUFFIX, Origin
from backups.models import Backup, BackupSchedule
from health.services import schedule_slot, slot_problems
from hostlib import backups as nas
from hostlib.errors import HostError
from hostlib.keys import ensure_identity

MAX_UPLOAD = 2 << 30  # bytes: a backup larger than this is not one Tarn made of a NAS's configuration


def folder() -> Path:
    path = settings.DATA_DIR / "backups"
    path.mkdir(mode=0o770, parents=True, exist_ok=True)
    return path


def path_of(backup: Backup) -> Path:
    return folder() / backup.name


def check_passphrase(passphrase: str, confirm: str | None = None, field: str = "passphrase") -> None:
    if not passphrase:
        raise ValidationError({field: "Give a passphrase."})
    if not PASSPHRASE_MIN <= len(passphrase) <= PASSPHRASE_MAX:
        raise ValidationError({field: f"{PASSPHRASE_MIN} to {PASSPHRASE_MAX} characters."})
    if "\x00" in passphrase:
        raise ValidationError({field: "A passphrase without NUL characters."})
    if confirm is not None and confirm != passphrase:
        raise ValidationError({f"{field}_confirm": "The two passphrases differ."})


# --- making a backup -------------------------------------------------------------------------------------------


def backup_start(*, user, passphrase: str, passphrase_confirm: str, include_series: bool = False) -> Operation:
    """A backup now, sealed with this passphrase (which goes to the worker as an operation secret, split)."""
    check_passphrase(passphrase, passphrase_confirm)
    _backups_possible()
    return operation_start(
        kind="config.backup",
        host=None,
        user=user,
        secret=passphrase,
        params={"origin": Origin.MANUAL, "include_series": bool(include_series)},
    )


def _backups_possible() -> None:
    try:
        database._live()
    except database.DatabaseError as exc:
        raise ValidationError(str(exc)) from None


@operation_runner("config.backup", lock="config", queue="default")
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
    backup = make(
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
    tracker.progress(100, f"Backup {backup.name} made ({_size(backup.size)}){note}{pushed}.")


def make(*, origin: str, user, recipient: str, wrapped: str, series: bool, using: str = "default") -> Backup:
    """Write a backup of the live state; its row goes to the database `using` (the restored one, for the state kept
    before a restore)."""
    members = _secrets()
    members[archive.DATABASE] = database.snapshot(include_series=series)
    now = timezone.now()
    name = f"tarn-{now:%Y%m%d-%H%M%S}-{secrets.token_hex(3)}{SUFFIX}"
    manifest = _manifest(user=user, at=now, series=series, origin=origin)
    members[archive.MANIFEST] = json.dumps(manifest, indent=1, sort_keys=True).encode()
    data = archive.seal(members, recipient=recipient, wrapped=wrapped)
    _write(folder() / name, data)
    return Backup.objects.using(using).create(
        name=name,
        origin=origin,
        user_id=user.pk if user and _exists(using, user.pk) else None,
        size=len(data),
        sha256=archive.digest(data),
        manifest=manifest,
    )


def _exists(using: str, user_id) -> bool:
    from django.contrib.auth import get_user_model  # noqa: PLC0415 - the user model is looked up when needed

    return get_user_model().objects.using(using).filter(pk=user_id).exists()


def _secrets() -> dict[str, bytes]:
    """The install's secrets: the secret key, the vault's key pair, the SSH key pair (made now if missing)."""
    vault.ensure_identity()
    ensure_identity(ssh_dir())
    files = {
        archive.VAULT_IDENTITY: vault.vault_dir() / "identity.age",
        archive.VAULT_RECIPIENT: vault.vault_dir() / "recipient.txt",
        archive.SSH_KEY: ssh_dir() / "id_ed25519",
        archive.SSH_PUBLIC: ssh_dir() / "id_ed25519.pub",
    }
    found = {name: path.read_bytes() for name, path in files.items()}
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


def _write(path: Path, data: bytes, mode: int = 0o640) -> None:
    """Atomically: a temporary file beside it, then renamed (the web's group may read a backup, to download it)."""
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _size(n: int) -> str:
    return f"{n / (1 << 20):.1f} MiB" if n >= 1 << 20 else f"{max(1, n // 1024)} KiB"


def retention(*, keep: int) -> list[str]:
    """Keep the newest `keep` backups made here (on demand or scheduled) and the last few kept before a restore;
    remove the others, files and rows."""
    removed = []
    kept = Backup.objects.filter(origin__in=(Origin.MANUAL, Origin.SCHEDULED)).order_by("-created_at", "-id")
    before = Backup.objects.filter(origin=Origin.PRE_RESTORE).order_by("-created_at", "-id")
    for backup in [*kept[keep:], *before[PRE_RESTORE_KEEP:]]:
        path_of(backup).unlink(missing_ok=True)
        removed.append(backup.name)
        backup.delete()
    return removed


def push(tracker: Tracker, backup: Backup, host: Host, *, keep: int) -> None:
    """A copy on the NAS (root only), and the NAS's copies beyond keep removed. A failure is kept on the row and
    raised for the schedule's alert; the local backup stands."""
    try:
        t = tracker.transport(host)
        nas.keep(t, NAS_FOLDER, backup.name, path_of(backup).read_bytes(), keep=keep, suffix=SUFFIX)
    except HostError as exc:
        Backup.objects.filter(pk=backup.pk).update(push_error=str(exc)[:500])
        raise HostError(f"Backup {backup.name} was made here, but pushing it to {host.name} failed: {exc}") from None
    backup.pushed_to = host
    Backup.objects.filter(pk=backup.pk).update(pushed_to=host, push_error="")


def backup_delete(*, backup: Backup, confirm: str) -> None:
    if confirm != backup.name:
        raise ValidationError({"confirm": f"Type {backup.name} to delete this backup."})
    path_of(backup).unlink(missing_ok=True)
    backup.delete()


# --- the schedule ----------------------------------------------------------------------------------------------


def schedule_get() -> BackupSchedule:
    schedule = BackupSchedule.objects.first()
    return schedule or BackupSchedule.objects.create()


def schedule_save(
    *,
    enabled: bool,
    every: str,
    hour: int,
    weekday: int = 6,
    day: int = 1,
    keep: int = 7,
    push_host: Host | None = None,
    include_series: bool = False,
    passphrase: str = "",
    passphrase_confirm: str = "",
) -> BackupSchedule:
    """Save the schedule. A passphrase given sets the backups' key (only its public half and the key wrapped with it
    are stored); one must be set before the schedule can be on."""
    problems = slot_problems(every=every, hour=hour, weekday=weekday, day=day)
    if not 1 <= keep <= KEEP_MAX:
        problems["keep"] = f"Keep 1 to {KEEP_MAX} backups."
    if push_host is not None and push_host.is_local:
        problems["push_host"] = "Choose a NAS reached over SSH: a copy on this machine is no copy."
    elif push_host is not None and push_host.read_only:
        problems["push_host"] = f"{push_host.name} is read-only in Tarn: nothing can be written there."
    schedule = schedule_get()
    if passphrase or passphrase_confirm:
        try:
            check_passphrase(passphrase, passphrase_confirm)
        except ValidationError as exc:
            problems.update(exc.message_dict)
    elif enabled and not schedule.recipient:
        problems["passphrase"] = "Set a passphrase for the scheduled backups (they are sealed with it)."
    if problems:
        raise ValidationError(problems)
    if passphrase:
        schedule.recipient, schedule.wrapped_key = archive.new_key(passphrase)
        schedule.key_set_at = timezone.now()
    schedule.enabled, schedule.every, schedule.hour, schedule.weekday, schedule.day = enabled, every, hour, weekday, day
    schedule.keep, schedule.push_host, schedule.include_series = keep, push_host, include_series
    schedule.save()
    return schedule


def backups_run_due(*, now=None) -> Operation | None:
    """Beat, every minute: start the scheduled backup once its slot has come (never for a slot before the schedule
    was made); a failure to start is kept for the alert."""
    now = now or timezone.now()
    schedule = BackupSchedule.objects.filter(enabled=True).first()
    if schedule is None:
        return None
    slot = schedule_slot(schedule, now)
    if slot < schedule.created_at or (schedule.last_started_at and schedule.last_started_at >= slot):
        return None
    schedule.last_started_at = now
    schedule.save(update_fields=["last_started_at"])
    try:
        with transaction.atomic():
            return operation_start(
                kind="config.backup",
                host=None,
                user=None,
                params={"origin": Origin.SCHEDULED, "include_series": schedule.include_series},
            )
    except ValidationError as exc:
        BackupSchedule.objects.filter(pk=schedule.pk).update(
            last_error=f"Not started: {'; '.join(exc.messages)}"[:500], last_error_at=now
        )
        return None


# --- restore ---------------------------------------------------------------------------------------------------


def upload_save(*, user, chunks, size: int | None) -> Backup:
    """An uploaded backup file, kept as it came (it is sealed) for a dry run and a restore."""
    if size is not None and size > MAX_UPLOAD:
        raise ValidationError({"file": f"The file is {_size(size)}: a Tarn backup is at most {_size(MAX_UPLOAD)}."})
    name = f"uploaded-{timezone.now():%Y%m%d-%H%M%S}-{secrets.token_hex(3)}{SUFFIX}"
    path, total, head = folder() / name, 0, b""
    try:
        with open(path, "xb") as fh:
            os.chmod(path, 0o640)
            for chunk in chunks:
                total += len(chunk)
                if total > MAX_UPLOAD:
                    raise ValidationError({"file": f"The file is larger than {_size(MAX_UPLOAD)}: not a Tarn backup."})
                head = head or chunk[:64]
                fh.write(chunk)
        if not archive.looks_like_backup(head):
            raise ValidationError(
                {"file": "This is not a Tarn configuration backup: it does not start with TARN-BACKUP."}
            )
    except BaseException:
        path.unlink(missing_ok=True)
        raise
    return Backup.objects.create(name=name, origin=Origin.UPLOADED, user=user, size=total)


def restore_start(*, backup: Backup, user, passphrase: str, dry_run: bool, confirm: str = "") -> Operation:
    """Check (dry run: open, migrate in memory, diff; nothing changes) or restore this backup."""
    if not passphrase:
        raise ValidationError({"passphrase": "Give the backup's passphrase."})
    if not path_of(backup).exists():
        raise ValidationError({"backup": f"The file of {backup.name} is gone from {folder()}."})
    if not dry_run and backup.checked_at is None:
        raise ValidationError({"backup": "Check it first (the dry run): see what it would change, then restore."})
    if not dry_run and confirm != backup.name:
        raise ValidationError({"confirm": f"Type {backup.name} to replace Tarn's configuration with it."})
    if not dry_run:
        _nothing_running()
    _backups_possible()
    return operation_start(
        kind="config.check" if dry_run else "config.restore",
        host=None,
        user=user,
        secret=passphrase,
        params={"backup": backup.pk, "name": backup.name},
    )


def _nothing_running(own: Operation | None = None) -> None:
    """A restore replaces the operations table: refused while other work is queued or running (it would go on
    against a database that no longer knows it)."""
    busy = Operation.objects.filter(status__in=(OperationStatus.QUEUED, OperationStatus.RUNNING))
    if own is not None:
        busy = busy.exclude(pk=own.pk)
    first = busy.first()
    if first is not None:
        raise ValidationError(
            {
                "backup": f"Wait for the operations under way to end ({busy.count()}, e.g. {first.kind} on "
                f"{first.target}): a restore replaces them."
            }
        )


def opened(backup_path: Path, passphrase: str) -> dict[str, bytes]:
    """The backup's members, or ValidationError naming the field (file or passphrase)."""
    try:
        return archive.open_(backup_path.read_bytes(), passphrase)
    except archive.ArchiveError as exc:
        raise ValidationError({exc.field: str(exc)}) from None


def check_newer(members: dict[str, bytes]) -> tuple[dict, list[str]]:
    """The manifest, and the migrations a restore will run; ValidationError for a backup of a newer Tarn."""
    manifest = json.loads(members[archive.MANIFEST])
    try:
        state = database.applied(members[archive.DATABASE])
    except database.DatabaseError as exc:
        raise ValidationError({"file": str(exc)}) from None
    newer = database.unknown_migrations(state)
    if newer:
        raise ValidationError(
            {
                "file": f"This backup was made by a newer Tarn ({manifest.get('tarn_version', '?')}; it has "
                f"{len(newer)} migration(s) this Tarn ({settings.TARN_VERSION}) does not know, e.g. {newer[0]}): "
                "update Tarn first, then restore it."
            }
        )
    return manifest, database.missing_migrations(state)


def dry_run(members: dict[str, bytes]) -> dict:
    """What restoring would change, worked out on an in-memory copy (the live state untouched)."""
    manifest, pending = check_newer(members)
    with database.opened(members[archive.DATABASE]):
        _migrate()
        changes = database.diff()
    return {
        "manifest": _shown(manifest),
        "migrations": pending,
        "secrets": _secrets_differ(members),
        **changes,
    }


def _migrate() -> None:
    try:
        database.migrate()
    except database.DatabaseError as exc:
        raise ValidationError({"file": str(exc)}) from None


def _shown(manifest: dict) -> dict:
    keys = ("tarn_version", "created_at", "created_by", "origin", "install", "series", "hosts", "counts")
    return {k: manifest.get(k) for k in keys}


def _secrets_differ(members: dict[str, bytes]) -> list[str]:
    """Which of the install's secrets the backup would replace (a backup of another install: all)."""
    mine = _secrets()
    return [name.removeprefix("secrets/") for name in archive.SECRETS if mine.get(name) != members[name]]


@operation_runner("config.check", lock="config", queue="default")
def check_run(tracker: Tracker) -> None:
    backup = Backup.objects.get(pk=tracker.op.params["backup"])
    tracker.progress(10, "Opening the backup")
    members = opened(path_of(backup), tracker.secret or "")
    tracker.progress(30, "Loading its database in memory and migrating it")
    result = dry_run(members)
    Backup.objects.filter(pk=backup.pk).update(
        checked=result,
        checked_at=timezone.now(),
        manifest=result["manifest"],
        sha256=archive.digest(path_of(backup).read_bytes()),
    )
    tracker.progress(100, f"Checked {backup.name}: {_summary(result)}. Nothing was changed.")


def _summary(result: dict) -> str:
    added = sum(s.get("added_count", 0) for s in result["sections"])
    removed = sum(s.get("removed_count", 0) for s in result["sections"])
    changed = sum(s.get("changed_count", 0) for s in result["sections"])
    return f"{added} added, {changed} changed, {removed} removed"


@operation_runner("config.restore", lock="config", queue="default")
def restore_run(tracker: Tracker) -> None:
    op = tracker.op
    backup = Backup.objects.get(pk=op.params["backup"])
    passphrase = tracker.secret or ""
    tracker.progress(5, "Opening the backup")
    members = opened(path_of(backup), passphrase)
    moved = restore(members, passphrase=passphrase, op=op, source=backup.name, log=tracker.log)
    tracker.progress(100, moved)


def restore(members: dict[str, bytes], *, passphrase: str, op: Operation | None, source: str, log) -> str:
    """Restore opened members over the live state: the current state kept first as a backup (same passphrase), then
    the database copied over in one step, then the secrets. Returns what to tell the admin."""
    manifest, pending = check_newer(members)
    _nothing_running(op)
    changed_secrets = _secrets_differ(members)
    if "secret_key" in changed_secrets and os.environ.get(
        "DJANGO_SECRET_KEY", os.environ.get("DJANGO_SECRET_KEY_FILE")
    ):
        raise ValidationError(
            {
                "backup": "This backup is of another install, and this Tarn takes its secret key from DJANGO_SECRET_KEY: "
                "unset it (the restore writes the backup's key into the data dir) and restore again."
            }
        )
    with database.opened(members[archive.DATABASE]) as alias:
        _migrate()
        log(f"Migrations run on the backup: {', '.join(pending) or 'none'}")
        recipient, wrapped = archive.new_key(passphrase)
        user = op.user if op else None
        kept = make(
            origin=Origin.PRE_RESTORE, user=user, recipient=recipient, wrapped=wrapped, series=True, using=alias
        )
        log(f"The current state is kept first: {kept.name}")
        _prepare(alias, op=op, user=user, source=source, kept=kept.name, manifest=manifest)
        staged = _stage_secrets(members, changed_secrets)
        try:
            database.replace_live()
        except Exception:
            for temporary, _ in staged:
                Path(temporary).unlink(missing_ok=True)
            raise
    for temporary, path in staged:
        os.replace(temporary, path)
    _reconcile()
    restart = (
        " Restart Tarn (stop it and run `make run` again) so every process uses the restored secret key."
        if ("secret_key" in changed_secrets)
        else ""
    )
    return (
        f"Restored {source} (made {manifest.get('created_at', '?')[:16]} by {manifest.get('created_by', '?')}); "
        f"the state before is kept as {kept.name}.{restart}"
    )


def _reconcile() -> None:
    """After a restore the rows are the backup's: files made since it was taken are listed again (kept, with their
    retention), uploads it does not know are deleted (the one just restored included: someone's configuration)."""
    known = set(Backup.objects.values_list("name", flat=True))
    for path in folder().glob(f"*{SUFFIX}"):
        if path.name in known:
            continue
        if path.name.startswith("uploaded-"):
            path.unlink(missing_ok=True)
        else:
            Backup.objects.create(name=path.name, origin=Origin.MANUAL, size=path.stat().st_size)


def _prepare(alias: str, *, op: Operation | None, user, source: str, kept: str, manifest: dict) -> None:
    """The restored database, made ready to be live: work that was under way when the backup was taken is marked
    ended (it is not running now), this restore's own operation and an audit entry are written into it."""
    database.keep_ids_ahead(("appliance_operation", "appliance_auditentry"))
    Operation.objects.using(alias).filter(status__in=(OperationStatus.QUEUED, OperationStatus.RUNNING)).update(
        status=OperationStatus.FAILED,
        finished_at=timezone.now(),
        message="Under way when the backup was taken; ended by the restore (it is not running now).",
    )
    user_id = user.pk if user and _exists(alias, user.pk) else None
    if op is not None:
        taken = Operation.objects.using(alias).filter(pk=op.pk).exists()
        row = Operation(
            pk=None if taken else op.pk,
            kind=op.kind,
            target=op.target,
            params=op.params,
            status=OperationStatus.RUNNING,
            message="Restoring",
            user_id=user_id,
            started_at=op.started_at,
            heartbeat_at=timezone.now(),
            worker=op.worker,
        )
        row.save(using=alias, force_insert=True)
        op.pk = row.pk  # the tracker finishes this row, in the restored database
    AuditEntry(
        kind=AuditKind.COMMAND,
        user_id=user_id,
        username=getattr(user, "username", "") or "manage.py",
        operation_id=op.pk if op else None,
        argv=["config-restore", source, f"kept-before={kept}", f"made={manifest.get('created_at', '?')}"],
        exit_code=0,
    ).save(using=alias)


def _stage_secrets(members: dict[str, bytes], changed: list[str]) -> list[tuple[str, Path]]:
    """The secrets that differ, written beside their files under temporary names (renamed once the database is in),
    each with the mode and group of the file it replaces."""
    targets = {
        archive.SECRET_KEY: settings.DATA_DIR / "secret_key",
        archive.VAULT_IDENTITY: vault.vault_dir() / "identity.age",
        archive.VAULT_RECIPIENT: vault.vault_dir() / "recipient.txt",
        archive.SSH_KEY: ssh_dir() / "id_ed25519",
        archive.SSH_PUBLIC: ssh_dir() / "id_ed25519.pub",
    }
    staged = []
    for name, path in targets.items():
        if name.removeprefix("secrets/") not in changed:
            continue
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        before = path.stat() if path.exists() else None
        fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=".restore-")
        with os.fdopen(fd, "wb") as fh:
            fh.write(members[name])
        os.chmod(temporary, before.st_mode & 0o777 if before else 0o600)
        if before and os.geteuid() == 0:
            os.chown(temporary, before.st_uid, before.st_gid)
        staged.append((temporary, path))
    return staged


def uploads_prune(*, now=None) -> int:
    """Uploaded backups not restored within a day go (they are sealed, but they are someone's whole configuration)."""
    cutoff = (now or timezone.now()) - timedelta(days=1)
    gone = 0
    for backup in Backup.objects.filter(origin=Origin.UPLOADED, created_at__lt=cutoff):
        path_of(backup).unlink(missing_ok=True)
        backup.delete()
        gone += 1
    return gone
