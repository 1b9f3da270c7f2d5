"""Operations: saved first, queued on commit, run by one task through a registry of runners (as NetBox's jobs).

A service calls operation_start(kind=…) and never imports a task; the worker's one task, operation_run, calls
operation_execute, which claims the row, finds the runner registered for its kind and tracks it to its end.
"""

import base64
import logging
import secrets
import socket
import threading
from collections.abc import Callable
from contextlib import contextmanager
from datetime import timedelta

from celery import current_app as app
from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import DatabaseError, IntegrityError, connections, transaction
from django.db.models import Q
from django.utils import timezone

from appliance.audit.context import audit_note_operation
from appliance.choices import OperationStatus
from appliance.connect import transport_for
from appliance.models import HostTurn, Operation, OperationSecret
from hostlib.errors import HostError
from hostlib.runner import Transport

log = logging.getLogger(__name__)
HEARTBEAT_SECONDS = 10
OPERATION_TASK = "appliance.tasks.operation_run"  # the one task; queued by name so no service imports it
LIMIT_MARGIN = 900  # seconds over a known duration (set-up, clean-up, a slow host) before Celery stops the work
RUNNERS: dict[str, Callable[["Tracker"], None]] = {}
LOCKS: dict[str, tuple[str, str]] = {}  # kind -> (what it holds under its host, its queue: host, bench or default)
READS: set[str] = set()  # kinds that only read their host: the ones a read-only host still starts
REAPED: dict[str, Callable[[Operation], None]] = {}  # kind -> what its app cleans up once the reaper failed one


def operation_runner(*kinds: str, lock: str = "", queue: str = "host", reads: bool = False):
    """Declare operation kinds once with the function that does their work: runner(tracker) -> None.

    lock: what an operation of these kinds holds under its host (`host:<name>:<lock>[:<subject>]`, one active
    operation per target; "" holds the host itself, or the subject the service names); queue: "host" (a host's
    changes one at a time), "bench" (one benchmark per host) or "default"; reads: the work only reads its host (an
    inventory refresh, a plan), so a host marked read-only starts it too; every other kind is refused there at
    start."""
    if queue not in ("host", "bench", "default"):
        raise ValueError(f"unknown queue {queue}")

    def register(fn):
        for kind in kinds:
            if RUNNERS.get(kind, fn) is not fn:
                raise ValueError(f"two runners for operation kind {kind}")
            RUNNERS[kind] = fn
            LOCKS[kind] = (lock, queue)
            (READS.add if reads else READS.discard)(kind)
        return fn

    return register


def operation_reaped(*kinds: str):
    """Declare what to clean up when the reaper fails an operation of these kinds (its worker died mid-way):
    fn(op) -> None, e.g. queue the removal of what a benchmark left on its host. Never to mend a row: a run reads
    its status from its Operation (appliance.runs)."""

    def register(fn):
        for kind in kinds:
            if REAPED.get(kind, fn) is not fn:
                raise ValueError(f"two clean-ups for reaped operations of kind {kind}")
            REAPED[kind] = fn
        return fn

    return register


def lock_key(host, *parts) -> str:
    """The target an operation on host locks: host:<name>[:<part>…] (empty parts left out)."""
    return ":".join(["host", host.name, *(str(p) for p in parts if p not in ("", None))])


class TargetBusy(ValidationError):
    """Another operation is already queued or running on the same target."""


def read_only_refusal(host, refusal: str = "nothing is changed on it") -> ValidationError:
    """The error for a change asked of a host marked read-only in Tarn, on the form's host field (or above it)."""
    return ValidationError({"host": f"{host.name} is read-only in Tarn: {refusal}."})


def operation_start(
    *, kind, host, user, subject="", runner: str = "", params=None, secret=None, seconds: int | None = None
) -> Operation:
    """Save the Operation row now and queue it once the surrounding transaction commits.

    A host marked read-only is refused here (a ValidationError naming it) unless the kind only reads it.
    Its target (the lock) and queue come from the kind's declaration (operation_runner): subject narrows the lock
    to one thing under it (a pool, a share, a run). runner: the registered runner's kind when it differs from kind
    (many storage commands share one runner).
    seconds: how long the work may take when that is known and longer than the default limit (a benchmark's
    runtime): its Celery time limit, plus a margin.
    secret (a password) is split: the queued message carries it XOR a random pad, the pad waits in the database
    until the worker takes it; neither half alone is the secret, and both are gone once the operation starts.
    """
    declared = LOCKS.get(runner or kind)
    if declared is None:
        raise ValueError(f"no runner is declared for operations of kind {runner or kind}")
    lock, queue = declared
    if host and host.read_only and (runner or kind) not in READS:
        raise read_only_refusal(host)
    # Tarn's own work (its configuration backups) has no host: it locks under "tarn" and runs on the default queue.
    target = lock_key(host, lock, subject) if host else ":".join(["tarn", *(p for p in (lock, subject) if p)])
    try:
        with transaction.atomic():
            op = Operation.objects.create(
                kind=kind,
                runner=runner,
                target=target,
                host=host,
                params=params or {},
                user=user if getattr(user, "pk", None) else None,
            )
            if secret:
                secret = _split(op, secret)
    except IntegrityError:
        raise TargetBusy(f"Another operation is already running on {target}; wait for it to finish.") from None
    audit_note_operation(op)  # the request's audit entry links the operation it started
    chosen = {"host": host.host_queue, "bench": host.bench_queue}.get(queue, "default") if host else "default"
    transaction.on_commit(lambda: _enqueue(op, chosen, secret, seconds))
    return op


def _split(op: Operation, secret: str) -> str:
    """Keep a random pad for the secret; return what the message carries (secret XOR pad, base64)."""
    data = secret.encode()
    pad = secrets.token_bytes(len(data))
    OperationSecret.objects.create(operation=op, pad=pad)
    return base64.b64encode(_xor(data, pad)).decode()


def _join(op_id: int, carried: str | None) -> str | None:
    """The secret again, from the message's half and the pad, which is deleted here (it is used once)."""
    row = OperationSecret.objects.filter(operation_id=op_id).first()
    OperationSecret.objects.filter(operation_id=op_id).delete()
    if not carried or row is None:
        return None
    return _xor(base64.b64decode(carried), bytes(row.pad)).decode()


def _xor(data: bytes, pad: bytes) -> bytes:
    return bytes(a ^ b for a, b in zip(data, pad, strict=True))


def _enqueue(op: Operation, queue: str, secret=None, seconds: int | None = None) -> None:
    try:
        kwargs = {"secret": secret} if secret else {}
        limits = {}
        if seconds and seconds + LIMIT_MARGIN > settings.CELERY_TASK_SOFT_TIME_LIMIT:
            limits = {"soft_time_limit": seconds + LIMIT_MARGIN, "time_limit": seconds + LIMIT_MARGIN + 120}
        app.send_task(OPERATION_TASK, args=[op.pk], kwargs=kwargs, queue=queue, retry=False, **limits)
    except Exception as exc:  # broker down: say so on the operation instead of failing the request
        log.error("could not queue operation %s: %s", op.pk, exc)
        op.status, op.message = (
            OperationStatus.FAILED,
            "Could not queue the work: the task queue (Redis) is not reachable.",
        )
        Operation.objects.filter(pk=op.pk).update(status=op.status, message=op.message, finished_at=timezone.now())


class Tracker:
    """Handed to the runner: the operation, progress, messages, a log, and the secret its message carried."""

    def __init__(self, op: Operation, secret: str | None = None):
        self.op = op
        self.secret = secret

    def transport(self, host=None, *, read_only: bool | None = None) -> Transport:
        """The operation's host (or another one it reaches, e.g. a benchmark's peer), its commands audited as this
        operation's and its user's."""
        return transport_for(host or self.op.host, user=self.op.user, operation=self.op, read_only=read_only)

    def progress(self, percent: int, message: str = "") -> None:
        self.op.progress = max(0, min(100, int(percent)))
        fields = {"progress": self.op.progress, "heartbeat_at": timezone.now()}
        if message:
            self.op.message = fields["message"] = message[:1000]
        Operation.objects.filter(pk=self.op.pk).update(**fields)

    def log(self, line: str) -> None:
        self.op.log += line.rstrip("\n") + "\n"
        Operation.objects.filter(pk=self.op.pk).update(log=self.op.log, heartbeat_at=timezone.now())


def _heartbeat(op_id: int, stop: threading.Event) -> None:
    try:
        while not stop.wait(HEARTBEAT_SECONDS):
            try:
                Operation.objects.filter(pk=op_id, status=OperationStatus.RUNNING).update(heartbeat_at=timezone.now())
            except DatabaseError as exc:  # a busy SQLite: the next beat tries again; the reaper allows for a few
                log.warning("heartbeat of operation %s skipped: %s", op_id, exc)
    finally:
        connections.close_all()  # this thread's own connection


def _finish(op: Operation, status: str, message: str) -> None:
    Operation.objects.filter(pk=op.pk).update(
        status=status,
        message=message[:1000],
        finished_at=timezone.now(),
        progress=100 if status == OperationStatus.SUCCEEDED else op.progress,
    )


TURN_RETRY_SECONDS = 2  # a change that found its host busy is queued again this much later


def host_queue_kinds() -> list[str]:
    return [kind for kind, (_, queue) in LOCKS.items() if queue == "host"]


TURN_WAITING_SECONDS = 30  # a waiting change not seen going round this long (its message stranded) holds no one back
TURN_UNSEEN_SECONDS = 600  # …nor one never picked up after this long


def _turns_over():
    """Turns whose operation has ended (a dead worker's, once the reaper failed it; or given back)."""
    return HostTurn.objects.exclude(operation__status__in=[OperationStatus.QUEUED, OperationStatus.RUNNING])


def turn_take(operation_id: int) -> bool:
    """May this operation run now? One of a host's changes (its host queue's kinds) runs at a time, whichever worker
    or machine serves the queue, oldest first: True once it holds the host's turn (a HostTurn row, unique per host),
    or when it needs none (no host, another queue, no longer queued: the run then does what it does for those).
    A turn whose operation ended (its worker died and the reaper failed it) is taken back first. A waiting change is
    stamped each time it goes round (heartbeat_at): an older one whose message a lost worker stranded (no stamp for
    TURN_WAITING_SECONDS) does not hold the host's later changes back. The database busy (SQLite's lock): not now."""
    op = Operation.objects.filter(pk=operation_id).only("pk", "kind", "runner", "host_id", "status").first()
    kinds = host_queue_kinds()
    if op is None or op.host_id is None or op.status != OperationStatus.QUEUED or (op.runner or op.kind) not in kinds:
        return True
    now = timezone.now()
    try:
        with transaction.atomic():
            Operation.objects.filter(pk=op.pk, status=OperationStatus.QUEUED).update(heartbeat_at=now)
            _turns_over().filter(host_id=op.host_id).delete()
            alive = Q(heartbeat_at__gte=now - timedelta(seconds=TURN_WAITING_SECONDS)) | Q(
                heartbeat_at__isnull=True, created_at__gte=now - timedelta(seconds=TURN_UNSEEN_SECONDS)
            )
            older = Operation.objects.filter(host_id=op.host_id, status=OperationStatus.QUEUED, pk__lt=op.pk)
            if older.filter(alive).filter(Q(kind__in=kinds) | Q(runner__in=kinds)).exists():
                return False  # an older change of the host waits (its message comes round again)
            try:
                with transaction.atomic():
                    HostTurn.objects.create(host_id=op.host_id, operation_id=op.pk)
            except IntegrityError:
                return HostTurn.objects.filter(operation_id=op.pk).exists()  # a redelivered message of its own
    except DatabaseError as exc:
        log.warning("operation %s: its host's turn could not be read now (%s); it goes round again", op.pk, exc)
        return False
    return True


def turn_give_back(operation_id: int) -> None:
    """The host's turn given back once its operation has ended; a second delivery of a running operation's message
    (which skips) leaves the running one its turn."""
    _turns_over().filter(operation_id=operation_id).delete()


def operation_execute(operation_id: int, secret: str | None = None) -> None:
    """The worker's side: claim the operation, run its kind's runner, record the end. secret: the message's half
    of a split secret (see operation_start)."""
    with operation_tracking(operation_id, secret=secret) as tracker:
        if tracker is None:
            return
        runner = RUNNERS.get(tracker.op.runner or tracker.op.kind)
        if runner is None:
            raise ValidationError(f"No runner is registered for operations of kind {tracker.op.kind}.")
        runner(tracker)


@contextmanager
def operation_tracking(operation_id: int, secret: str | None = None):
    """Run the body as the operation's work: running → succeeded, or failed with a message to show.

    Yields a Tracker, or None when the operation is no longer queued (reaped, or a redelivered
    message after a lost worker): the caller must then do nothing.
    """
    claimed = Operation.objects.filter(pk=operation_id, status=OperationStatus.QUEUED).update(
        status=OperationStatus.RUNNING,
        started_at=timezone.now(),
        heartbeat_at=timezone.now(),
        worker=f"{socket.gethostname()}",
    )
    secret = _join(operation_id, secret)  # the pad goes now, whether the operation runs or not
    if not claimed:
        log.warning("operation %s is not queued any more; skipping", operation_id)
        yield None
        return
    op = Operation.objects.get(pk=operation_id)
    stop = threading.Event()
    beat = threading.Thread(target=_heartbeat, args=(op.pk, stop), daemon=True)
    beat.start()
    try:
        yield Tracker(op, secret)
    except (HostError, ValidationError) as exc:
        message = "; ".join(exc.messages) if isinstance(exc, ValidationError) else str(exc)
        _finish(op, OperationStatus.FAILED, message)
    except SoftTimeLimitExceeded:
        _finish(op, OperationStatus.FAILED, "Stopped: the operation ran past its time limit.")
    except Exception as exc:
        log.exception("operation %s (%s) failed", op.pk, op.kind)
        _finish(op, OperationStatus.FAILED, f"Internal error ({type(exc).__name__}); see the worker log.")
    else:
        _finish(op, OperationStatus.SUCCEEDED, Operation.objects.get(pk=op.pk).message or "Done.")
    finally:
        stop.set()


def operations_reap_lost(*, queued_ids: set[int] | None, older_than: timedelta) -> int:
    """Fail queued operations whose message the task queue no longer holds (nothing ran; the target is free)."""
    if queued_ids is None:
        return 0
    cutoff = timezone.now() - older_than
    lost = Operation.objects.filter(status=OperationStatus.QUEUED, created_at__lt=cutoff).exclude(pk__in=queued_ids)
    OperationSecret.objects.filter(operation__in=lost).delete()
    return lost.update(
        status=OperationStatus.FAILED,
        finished_at=timezone.now(),
        message="Its queued message was lost (the task queue restarted?): nothing ran. Start it again.",
    )


def operations_reap(*, stale_after: timedelta) -> int:
    """Mark running operations whose worker stopped reporting as failed, each then cleaned up after by its kind's
    operation_reaped; returns how many."""
    cutoff = timezone.now() - stale_after
    stale = Operation.objects.filter(status=OperationStatus.RUNNING, heartbeat_at__lt=cutoff)
    reaped = 0
    for op in stale.defer("log"):
        if not stale.filter(pk=op.pk).update(
            status=OperationStatus.FAILED,
            finished_at=timezone.now(),
            message="The worker running this operation stopped responding; marked failed by the reaper.",
        ):
            continue  # it ended meanwhile
        reaped += 1
        cleanup = REAPED.get(op.runner or op.kind)
        try:
            if cleanup:
                cleanup(op)
        except Exception:  # one app's clean-up must not keep the reaper from the next operation
            log.exception("cleaning up after reaped operation %s (%s) failed", op.pk, op.kind)
    return reaped
