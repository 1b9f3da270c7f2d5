"""Reads for the appliance app."""

from django.core.paginator import Paginator
from django.db.models import Q

from appliance.models import AuditEntry, Host, Operation


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
    """Operations for lists: without the log and params, which can be large."""
    return Operation.objects.select_related("host", "user").defer("log", "params")


def operation_recent(*, host=None, limit=10):
    qs = _operation_rows()
    if host is not None:
        qs = qs.filter(host=host)
    return qs[:limit]


def operation_page(*, page: int, status: str = "", kind: str = ""):
    qs = _operation_rows()
    if status:
        qs = qs.filter(status=status)
    if kind:
        qs = qs.filter(kind=kind)
    return Paginator(qs, 50).get_page(page)


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
    if since:
        qs = qs.filter(at__gte=since)
    if until:
        qs = qs.filter(at__lt=until)
    return qs


def audit_page(*, page: int, **filters):
    return Paginator(audit_filter(**filters), 50).get_page(page)
