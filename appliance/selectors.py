"""Reads for the appliance app."""

from django.core.paginator import Paginator
from django.db.models import Q

from appliance.models import AuditEntry, Host, Operation


def host_list():
    return Host.objects.all()


def host_current(request) -> Host | None:
    """The host chosen in the switcher (kept in the session), else the first one."""
    hosts = {h.pk: h for h in Host.objects.all()}
    return hosts.get(request.session.get("host_id")) or next(iter(hosts.values()), None)


def operation_recent(*, host=None, limit=10):
    qs = Operation.objects.select_related("host", "user")
    if host is not None:
        qs = qs.filter(host=host)
    return qs[:limit]


def operation_page(*, page: int, status: str = "", kind: str = ""):
    qs = Operation.objects.select_related("host", "user")
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
