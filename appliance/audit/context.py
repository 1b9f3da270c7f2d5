"""What the request being audited started: operation_start notes its Operation here; the audit middleware reads it."""

from contextvars import ContextVar

_started: ContextVar[list | None] = ContextVar("tarn_audit_started", default=None)


def audit_begin() -> object:
    return _started.set([])


def audit_end(token) -> list:
    started = _started.get() or []
    _started.reset(token)
    return started


def audit_note_operation(op) -> None:
    started = _started.get()
    if started is not None:
        started.append(op)
