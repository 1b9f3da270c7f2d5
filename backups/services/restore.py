"""Restoring a backup: an upload kept (sealed) for a day; the dry run (backups.check), which shows what a restore
would change and whether this Tarn made the backup; the restore (backups.restore), which brings exactly the file
that was checked (the same bytes: its SHA-256), checked again the same way, the state before kept first."""

import json
import os
import tempfile
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.core.exceptions import ValidationError
from django.utils import timezone

from appliance import datadir, vault
from appliance.checks import confirmed
from appliance.choices import AuditKind, OperationStatus
from appliance.connect import ssh_dir
from appliance.models import AuditEntry, Operation
from appliance.operations import Tracker, operation_runner, operation_start
from backups import archive, database, signing
from backups.choices import MADE_ELSEWHERE, Origin
from backups.models import Backup
from backups.services import files
from backups.services.make import backup_make, backups_possible, secrets_now, user_exists

ELSEWHERE = (
    f'This backup was not made by this Tarn (or was altered since): type "{MADE_ELSEWHERE}" to restore it anyway.'
)


def upload_save(*, user, chunks, size: int | None) -> Backup:
    """An uploaded backup file, kept as it came (it is sealed) for a dry run and a restore."""
    if size is not None and size > files.MAX_UPLOAD:
        raise ValidationError(
            {"file": f"The file is {files.size(size)}: a Tarn backup is at most {files.size(files.MAX_UPLOAD)}."}
        )
    name = files.new_name("uploaded")
    total, head = files.upload(name, chunks, limit=files.MAX_UPLOAD)
    if not archive.looks_like_backup(head):
        files.remove_upload(name)
        raise ValidationError({"file": "This is not a Tarn configuration backup: it does not start with TARN-BACKUP."})
    return Backup.objects.create(name=name, origin=Origin.UPLOADED, user=user, size=total)


def backup_restore_start(
    *, backup: Backup, user, passphrase: str, dry_run: bool, confirm: str = "", accept: str = ""
) -> Operation:
    """Check (dry run: open, migrate in memory, diff; nothing changes) or restore this backup: the restore takes the
    file the check read (its SHA-256), and a backup this Tarn did not make only with MADE_ELSEWHERE typed."""
    if not passphrase:
        raise ValidationError({"passphrase": "Give the backup's passphrase."})
    files.open_file(backup).close()  # there: a plain file, in its folder
    checked = backup.checked or {}
    if not dry_run:
        if backup.checked_at is None or not checked.get("sha256"):
            raise ValidationError({"backup": "Check it first (the dry run): see what it would change, then restore."})
        confirmed(confirm, backup.name, f"Type {backup.name} to replace Tarn's configuration with it.")
        if not checked.get("made_here") and accept != MADE_ELSEWHERE:
            raise ValidationError({"accept": ELSEWHERE})
        _nothing_running()
    backups_possible()
    params = {"backup": backup.pk, "name": backup.name}
    if not dry_run:
        params |= {"sha256": checked["sha256"], "made_elsewhere": accept == MADE_ELSEWHERE}
    return operation_start(
        kind="backups.check" if dry_run else "backups.restore", host=None, user=user, secret=passphrase, params=params
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


def backup_open(data: bytes, passphrase: str) -> dict[str, bytes]:
    """The members of a backup file's bytes, or ValidationError naming the field (file or passphrase)."""
    try:
        return archive.open_(data, passphrase)
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


@contextmanager
def _checked_database(members: dict[str, bytes]):
    """The backup's database in memory, migrated and checked (backups.database.checked); its refusals, and any
    raised while it is open, name the file."""
    try:
        with database.checked(members[archive.DATABASE]) as (alias, pending):
            yield alias, pending
    except database.DatabaseError as exc:
        raise ValidationError({"file": str(exc)}) from None


def dry_run(members: dict[str, bytes]) -> dict:
    """What restoring would change, worked out on an in-memory copy (the live state untouched), and whether this
    Tarn made the backup."""
    manifest, pending = check_newer(members)
    with _checked_database(members):
        changes = database.diff()
    return {
        "manifest": _shown(manifest),
        "migrations": pending,
        "secrets": _secrets_differ(members),
        "made_here": signing.made_here(members),
        **changes,
    }


def _shown(manifest: dict) -> dict:
    keys = ("tarn_version", "created_at", "created_by", "origin", "install", "series", "hosts", "counts")
    return {k: manifest.get(k) for k in keys}


def _secrets_differ(members: dict[str, bytes]) -> list[str]:
    """Which of the install's secrets the backup would replace (a backup of another install: all)."""
    mine = secrets_now()
    return [name.removeprefix("secrets/") for name in archive.SECRETS if mine.get(name) != members[name]]


@operation_runner("backups.check", lock="config", queue="default")
def check_run(tracker: Tracker) -> None:
    backup = Backup.objects.get(pk=tracker.op.params["backup"])
    tracker.progress(10, "Opening the backup")
    data = files.read(backup)  # read once: what is checked is what its digest names
    members = backup_open(data, tracker.secret or "")
    tracker.progress(30, "Loading its database in memory, migrating it and checking its schema")
    result = dry_run(members) | {"sha256": archive.digest(data)}
    Backup.objects.filter(pk=backup.pk).update(
        checked=result, checked_at=timezone.now(), manifest=result["manifest"], sha256=result["sha256"]
    )
    made = "made by this Tarn" if result["made_here"] else "made elsewhere (not signed by this Tarn)"
    tracker.progress(100, f"Checked {backup.name}: {_summary(result)}; {made}. Nothing was changed.")


def _summary(result: dict) -> str:
    added = sum(s.get("added_count", 0) for s in result["sections"])
    removed = sum(s.get("removed_count", 0) for s in result["sections"])
    changed = sum(s.get("changed_count", 0) for s in result["sections"])
    return f"{added} added, {changed} changed, {removed} removed"


@operation_runner("backups.restore", lock="config", queue="default")
def restore_run(tracker: Tracker) -> None:
    op = tracker.op
    backup = Backup.objects.get(pk=op.params["backup"])
    passphrase = tracker.secret or ""
    tracker.progress(5, "Opening the backup")
    data = files.read(backup)
    if archive.digest(data) != op.params.get("sha256"):
        raise ValidationError(
            f"Refused: {backup.name} is not the file that was checked (its SHA-256 differs): check it again, then "
            "restore."
        )
    members = backup_open(data, passphrase)
    accept = bool(op.params.get("made_elsewhere"))
    moved = backup_restore(members, passphrase=passphrase, op=op, source=backup.name, log=tracker.log, accept=accept)
    tracker.progress(100, moved)


def backup_restore(
    members: dict[str, bytes], *, passphrase: str, op: Operation | None, source: str, log, accept: bool
) -> str:
    """Restore opened members over the live state: the current state kept first as a backup (same passphrase), then
    the database copied over in one step, then the secrets. accept: a backup this Tarn did not make may be
    restored. Returns what to tell the admin."""
    if not accept and not signing.made_here(members):
        raise ValidationError({"accept": ELSEWHERE})
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
    with _checked_database(members) as (alias, _):
        log(f"Migrations run on the backup: {', '.join(pending) or 'none'}")
        recipient, wrapped = archive.new_key(passphrase)
        user = op.user if op else None
        kept = backup_make(
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
    made, uploaded = files.listed()
    for name in uploaded:
        if name not in known:
            files.remove_upload(name)
    for name in made:
        if name not in known:
            size = os.lstat(files.folder() / name).st_size
            Backup.objects.create(name=name, origin=Origin.MANUAL, size=size)


def _prepare(alias: str, *, op: Operation | None, user, source: str, kept: str, manifest: dict) -> None:
    """The restored database, made ready to be live: work that was under way when the backup was taken is marked
    ended (it is not running now), this restore's own operation and an audit entry are written into it."""
    database.keep_ids_ahead(("appliance_operation", "appliance_auditentry"))
    Operation.objects.using(alias).filter(status__in=(OperationStatus.QUEUED, OperationStatus.RUNNING)).update(
        status=OperationStatus.FAILED,
        finished_at=timezone.now(),
        message="Under way when the backup was taken; ended by the restore (it is not running now).",
    )
    user_id = user.pk if user and user_exists(alias, user.pk) else None
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
    each with the mode and group of the file it replaces; every folder is a checked key folder."""
    targets = {
        archive.SECRET_KEY: datadir.data_dir() / "secret_key",
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
        before = path.lstat() if os.path.lexists(path) else None
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
        files.remove(backup)
        backup.delete()
        gone += 1
    return gone
