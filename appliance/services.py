"""Writes for the appliance app: logins, API tokens, hosts, host probes, the operation reaper."""

import gzip
import json
import os
from datetime import timedelta
from pathlib import Path

from celery import current_app as app
from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Q, Sum
from django.utils import timezone

from appliance.broker import queued_operation_ids
from appliance.checks import confirmed
from appliance.choices import AuditKind, OperationStatus, TransportKind
from appliance.connect import transport_for
from appliance.models import ApiToken, AuditEntry, Host, LoginAttempts, Operation
from appliance.operations import (
    Tracker,
    operation_runner,
    operation_start,
    operations_reap,
    operations_reap_lost,
    read_only_refusal,
)
from appliance.probes import READERS
from hostlib import facts as host_facts
from hostlib.errors import HostError
from hostlib.keys import is_private_key
from hostlib.runner import ssh_keyscan


# --- logins ------------------------------------------------------------------------------------
def login_attempt_allowed(*, username: str, address: str | None) -> bool:
    """Count this attempt, atomically and before the password is checked; False once this user name from this
    address, or this address across all names (password spraying), used up its attempts in the window."""
    name, addr, now = username.lower()[:150], (address or "")[:45], timezone.now()
    window = settings.TARN_LOGIN_WINDOW
    with transaction.atomic():  # SQLite: an IMMEDIATE transaction; PostgreSQL: the row lock
        row, _ = LoginAttempts.objects.select_for_update().get_or_create(
            username=name, address=addr, defaults={"window_started": now}
        )
        if row.window_started < now - window:
            row.count, row.window_started = 0, now
        row.count += 1
        row.save(update_fields=["count", "window_started"])
        recent = LoginAttempts.objects.filter(address=addr, window_started__gte=now - window)
        from_address = recent.aggregate(n=Sum("count"))["n"] or 0
    LoginAttempts.objects.filter(window_started__lt=now - 4 * window).delete()
    return row.count <= settings.TARN_LOGIN_MAX_FAILURES and from_address <= settings.TARN_LOGIN_MAX_PER_ADDRESS


def login_succeeded(*, username: str, address: str | None) -> None:
    LoginAttempts.objects.filter(username=username.lower()[:150], address=(address or "")[:45]).delete()


# --- API tokens --------------------------------------------------------------------------------
def api_token_create(*, user, name: str) -> tuple[ApiToken, str]:
    """A new token; the key is returned once and only its hash is kept."""
    key = ApiToken.new_key()
    token = ApiToken.objects.create(user=user, name=name, key_hash=ApiToken.hash(key), hint=key[:9])
    return token, key


def api_token_revoke(*, user, token_id: int) -> None:
    ApiToken.objects.filter(pk=token_id, user=user, revoked_at__isnull=True).update(revoked_at=timezone.now())


# --- hosts -------------------------------------------------------------------------------------
def host_create(
    *,
    name: str,
    address: str,
    port: int,
    username: str,
    identity_file: str,
    host_keys: list[str] | None,
    read_only: bool,
    user,
) -> Host:
    """Add an SSH host: pin its host key (given, or scanned now), then probe it. The probe runs in a worker: it
    proves Tarn can log in with its key, which only the workers can read (the web runs unprivileged)."""
    if Host.objects.filter(name=name).exists():
        raise ValidationError({"name": f"A host named {name} exists already."})
    try:
        keys = host_keys or ssh_keyscan(address, port, timeout=settings.TARN_SSH_CONNECT_TIMEOUT)
    except HostError as exc:
        raise ValidationError({"address": str(exc)}) from None
    with transaction.atomic():
        host = Host.objects.create(
            name=name,
            transport=TransportKind.SSH,
            address=address,
            port=port,
            username=username,
            identity_file=identity_file,
            host_keys="\n".join(keys),
            read_only=read_only,
        )
        host_probe_start(host=host, user=user)
    transaction.on_commit(lambda: _listen_on_host_queues(host))
    return host


def host_remove(*, host: Host, confirm: str, user) -> None:
    """Forget a host: Tarn's rows for it go (its inventory, shares and schedules as Tarn knows them); nothing on the
    host itself changes. Needs its name typed; never the local host, never while an operation runs on it."""
    if host.is_local:
        raise ValidationError({"confirm": "The local host cannot be removed."})
    confirmed(confirm, host.name, f"Type the host's name, {host.name}, to remove it.")
    if host.operations.filter(status__in=OperationStatus.active()).exists():
        raise ValidationError({"confirm": f"An operation is still running on {host.name}; wait for it to end."})
    AuditEntry.objects.create(
        kind=AuditKind.COMMAND,
        user=user,
        username=getattr(user, "username", "") or "",
        host_name=host.name,
        argv=["host-remove", host.name, f"{host.username}@{host.address}:{host.port}"],
    )
    host.delete()


def _listen_on_host_queues(host: Host) -> None:
    """Ask running workers to consume the new host's queues (they read the rest at start)."""
    try:
        replies = app.control.inspect(timeout=1).ping() or {}
    except Exception:  # a broker that is down must not fail adding a host
        return
    for worker in replies:
        for prefix, queue in (("hosts@", host.host_queue), ("bench@", host.bench_queue)):
            if worker.startswith(prefix):
                app.control.add_consumer(queue, destination=[worker], reply=False)


def host_probe_start(*, host: Host, user) -> Operation:
    return operation_start(kind="appliance.host_probe", host=host, user=user)


@operation_runner("appliance.host_probe", lock="", reads=True)
def host_probe_run(tracker: Tracker) -> None:
    host = tracker.op.host
    if not host.is_local:
        tracker.progress(5, f"Logging in to {host.username}@{host.address}")
        try:
            if host.identity_file and not is_private_key(Path(host.identity_file)):
                raise HostError(f"no readable SSH private key at {host.identity_file}")
            host_facts.reachable(tracker.transport(), timeout=settings.TARN_SSH_CONNECT_TIMEOUT + 5)
        except HostError as exc:
            host.facts_error = f"Could not log in: {exc}"[:500]
            host.observed_at = timezone.now()
            host.save(update_fields=["facts_error", "observed_at"])
            raise HostError(host.facts_error) from None
    tracker.progress(10, f"Asking {host.name} what it has")
    host_refresh_facts(host=host, operation=tracker.op)
    if host.facts_error:
        raise HostError(host.facts_error)
    # What the pages show of a new host (pools, free disks, links, kernel values) is read now, not at the next beat.
    for n, (title, reader) in enumerate(READERS):
        tracker.progress(20 + 70 * n // max(len(READERS), 1), title)
        try:
            reader(host=host, operation=tracker.op)
        except HostError as exc:
            tracker.log(f"{title}: {exc}")
    tracker.progress(100, "ZFS found" if host.has_zfs else "No OpenZFS on this host")


def host_refresh_facts(*, host: Host, operation: Operation | None = None) -> Host:
    """Read what the host offers into host.facts (a read; errors are recorded, not raised)."""
    try:
        transport = transport_for(host, user=operation.user if operation else None, operation=operation)
        host.facts = host_facts.gather(transport).as_dict()
        host.facts_error = ""
    except HostError as exc:
        host.facts_error = str(exc)[:500]
    host.observed_at = timezone.now()
    host.save(update_fields=["facts", "facts_error", "observed_at"])
    return host


def hosts_refresh_facts() -> int:
    hosts = list(
        Host.objects.filter(Q(observed_at__isnull=True) | Q(observed_at__lt=timezone.now() - timedelta(minutes=5)))
    )
    for host in hosts:
        host_refresh_facts(host=host)
    return len(hosts)


def audit_prune(*, now=None) -> tuple[int, Path | None]:
    """Entries older than TARN_AUDIT_RETENTION_DAYS go to a gzipped JSON-lines file first, then leave the database;
    the pruning itself is an audit entry naming the file. Returns (entries pruned, file)."""
    days = settings.TARN_AUDIT_RETENTION_DAYS
    if days <= 0:
        return 0, None
    cutoff = (now or timezone.now()) - timedelta(days=days)
    old = AuditEntry.objects.filter(at__lt=cutoff).order_by("id")
    last = old.values_list("id", flat=True).last()
    if last is None:
        return 0, None
    folder = settings.DATA_DIR / "audit-exports"
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    path = folder / f"audit-before-{cutoff:%Y%m%dT%H%M%SZ}.jsonl.gz"
    count = 0
    with gzip.open(path, "wt", encoding="utf-8") as out:
        for row in old.filter(id__lte=last).values().iterator(chunk_size=5000):
            out.write(json.dumps(row, default=str) + "\n")
            count += 1
    with open(path, "rb") as written:
        os.fsync(written.fileno())
    AuditEntry.objects.filter(id__lte=last, at__lt=cutoff).delete_exported()
    AuditEntry.objects.create(kind=AuditKind.COMMAND, username="tarn", argv=["audit-prune", str(count), str(path)])
    return count, path


def operations_reap_stale() -> int:
    """Beat: running operations whose worker went silent, and queued ones whose message the queue lost."""
    stale = timedelta(seconds=settings.TARN_OPERATION_STALE_SECONDS)
    # The queue is read before the rows: an operation queued after the read is younger than the grace period.
    lost = operations_reap_lost(queued_ids=queued_operation_ids(), older_than=2 * stale)
    return operations_reap(stale_after=stale) + lost


def host_for_changes(host: Host | None, *, refusal: str = "nothing is changed on it") -> Host:
    """The host an operation would change: one is chosen, and it is not read-only in Tarn (a field error if not)."""
    if host is None:
        raise ValidationError({"host": "Add a host first (Hosts → Add host)."})
    if host.read_only:
        raise read_only_refusal(host, refusal)
    return host
