"""Reads for the appliance app."""

from dataclasses import dataclass
from datetime import timedelta

from django.db import connection
from django.db.models import Q
from django.db.models.expressions import RawSQL
from django.utils import timezone

from appliance.choices import OperationStatus
from appliance.models import AuditEntry, Host, Operation

SEARCH_TABLE = "appliance_audit_search"  # SQLite's FTS5 trigram index of path and argv (migration 0007)
SEARCH_WINDOW = timedelta(days=7)  # a text search with no dates looks this far back (an indexed range, not a scan)


@dataclass
class KeysetPage:
    """One page of a newest-first list, found by id (no OFFSET, no COUNT: as fast on page 5,000 as on page 1).
    newer / older: the cursors of the neighbouring pages, None at either end."""

    object_list: list
    newer: int | None
    older: int | None


def keyset_page(qs, *, before: int | None = None, after: int | None = None, size: int = 50) -> KeysetPage:
    """The page older than id `before`, or newer than id `after`, or the newest."""
    if after is not None:
        rows = list(qs.filter(pk__gt=after).order_by("pk")[: size + 1])
        more_newer = len(rows) > size
        rows = rows[:size][::-1]
        older = rows[-1].pk if rows and qs.filter(pk__lt=rows[-1].pk).exists() else None
        return KeysetPage(rows, rows[0].pk if more_newer else None, older)
    if before is not None:
        qs_page = qs.filter(pk__lt=before)
    else:
        qs_page = qs
    rows = list(qs_page.order_by("-pk")[: size + 1])
    older = rows[size - 1].pk if len(rows) > size else None
    rows = rows[:size]
    newer = rows[0].pk if before is not None and rows and qs.filter(pk__gt=rows[0].pk).exists() else None
    return KeysetPage(rows, newer, older)


def host_list(request=None) -> list[Host]:
    """All hosts; read once per request however many parts of the page ask."""
    if request is None:
        return list(Host.objects.all())
    if not hasattr(request, "_tarn_hosts"):
        request._tarn_hosts = list(Host.objects.all())
    return request._tarn_hosts


def host_current(request) -> Host | None:
    """The host chosen in the switcher (kept in the session), else the first one."""
    hosts = host_list(request)
    chosen = request.session.get("host_id")
    return next((h for h in hosts if h.pk == chosen), hosts[0] if hosts else None)


def _operation_rows():
    """Operations for lists: without the log, which can be large (the params name the operation in words)."""
    return Operation.objects.select_related("host", "user").defer("log")


def operations_of(app: str, *, host=None):
    """One app's operations (kinds "<app>.…"), on host if given, newest first: a range over the kinds' index (kind,
    host, -id), not kind LIKE 'app.%', which SQLite (case-insensitive LIKE) answers by reading every operation
    (24 ms of the Directory page at 100,000)."""
    qs = _operation_rows().filter(kind__gte=f"{app}.", kind__lt=f"{app}/")  # '/' follows '.' in ASCII
    return (qs.filter(host=host) if host is not None else qs).order_by("-id")


REFUSAL_SHOWN = timedelta(hours=1)


def operation_refused(*, kinds: list[str], host=None, **params) -> Operation | None:
    """The latest attempt of these kinds (on host, with these params), when the host refused it within the last hour:
    the form that asked shows why, beside its fields, as the operation's page does. None once a later one worked."""
    qs = Operation.objects.filter(kind__in=kinds, **{f"params__{k}": v for k, v in params.items()})
    if host is not None:
        qs = qs.filter(host=host)
    # Three columns first: most of the time the latest worked, and the page need not build the whole row (with its
    # host and user) to know it (a quarter of the Encryption page's time, its two forms asking).
    latest = qs.order_by("-id").values_list("pk", "status", "finished_at").first()
    if latest is None:
        return None
    pk, status, finished_at = latest
    if status != OperationStatus.FAILED or not finished_at or finished_at <= timezone.now() - REFUSAL_SHOWN:
        return None
    return _operation_rows().filter(pk=pk).first()


def operation_recent(*, host=None, limit=10):
    qs = _operation_rows()
    if host is not None:
        qs = qs.filter(host=host)
    return qs[:limit]


def operation_page(*, before=None, after=None, status: str = "", kind: str = "") -> KeysetPage:
    qs = _operation_rows()
    if status:
        qs = qs.filter(status=status)
    if kind:
        qs = qs.filter(kind=kind)
    return keyset_page(qs, before=before, after=after)


def audit_filter(*, kind: str = "", user: str = "", host: str = "", q: str = "", since=None, until=None):
    qs = AuditEntry.objects.all()
    if kind:
        qs = qs.filter(kind=kind)
    if user:
        qs = qs.filter(username=user)
    if host:
        qs = qs.filter(host_name=host)
    if q:
        qs = qs.filter(Q(path__icontains=q) | Q(argv__icontains=q))
        if connection.vendor == "sqlite" and len(q) >= 3:  # answered from the trigram index, then checked as above
            phrase = '"' + q.replace('"', '""') + '"'
            qs = qs.filter(id__in=RawSQL(f"SELECT rowid FROM {SEARCH_TABLE} WHERE {SEARCH_TABLE} MATCH %s", [phrase]))
        if not since and not until:
            since = timezone.now() - SEARCH_WINDOW
    # Entries are appended in time order, so a time window is also an id range: bounding the id lets the newest-
    # first walk stop at the window's edge instead of reading the whole table for a rare match.
    if since:
        first = AuditEntry.objects.filter(at__gte=since).order_by("at").values_list("id", flat=True).first()
        qs = qs.filter(at__gte=since, id__gte=first) if first else qs.none()
    if until:
        last = AuditEntry.objects.filter(at__lt=until).order_by("-at").values_list("id", flat=True).first()
        qs = qs.filter(at__lt=until, id__lte=last) if last else qs.none()
    return qs


def audit_page(*, before=None, after=None, **filters) -> KeysetPage:
    # the rows name their operation by id (a link): no join to it, whose row (and log) would be read for nothing
    return keyset_page(audit_filter(**filters), before=before, after=after)
