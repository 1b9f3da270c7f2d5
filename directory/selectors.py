"""Reads of the directory: a host's membership or LDAP directory, their users and groups from the cache (paged,
searched), the names as shares write them (LAB\\alice, @LAB\\staff; an LDAP directory's: alice, @staff), and the
dashboard's panel."""

from django.core.paginator import Paginator
from django.db.models import Q

from appliance.choices import AccountKind
from appliance.selectors import operations_of
from directory.models import DirectoryName, DomainMember, LdapDirectory

PAGE = 50


def member_of(*, host) -> DomainMember | None:
    return DomainMember.objects.filter(host=host).first() if host else None


def ldap_of(*, host) -> LdapDirectory | None:
    return LdapDirectory.objects.filter(host=host).first() if host else None


def other_directory(*, host, wanted: str) -> str:
    """Why host cannot take `wanted` ("domain" or "ldap"): the other kind it already reads its users and groups from
    (a host has one directory), or ""."""
    if wanted == "ldap":
        member = member_of(host=host)
        return f"{host.name} is in the domain {member.realm}: its users come from there." if member else ""
    ldap = ldap_of(host=host)
    return f"{host.name} reads the LDAP directory {ldap.uri}: remove it first." if ldap else ""


def names_page(*, host, kind: str = AccountKind.USER, query: str = "", page: int | str = 1, per_page: int = PAGE):
    """One page of the cached users (or groups), optionally those whose name contains query (case-insensitive)."""
    rows = DirectoryName.objects.filter(host=host, kind=kind).only("name", "kind")
    query = query.strip()
    if query:
        rows = rows.filter(name__icontains=query.partition("\\")[2] if "\\" in query else query)
    page = Paginator(rows.order_by("name"), per_page).get_page(page)
    member = member_of(host=host)
    for row in page:
        row.written = written(member, row.name, row.kind)
    return page


def written(member: DomainMember | None, name: str, kind: str = AccountKind.USER) -> str:
    """A directory's name as a share's valid users takes it: LAB\\alice, @LAB\\staff, "@LAB\\domain users" (quoted:
    it holds a space); with no domain (an LDAP directory's), alice and @staff."""
    text = ("@" if kind == AccountKind.GROUP else "") + (f"{member.workgroup}\\{name}" if member else name)
    return f'"{text}"' if " " in text else text


def names_counts(*, host) -> dict[str, int]:
    rows = DirectoryName.objects.filter(host=host)
    return {"users": rows.filter(kind=AccountKind.USER).count(), "groups": rows.filter(kind=AccountKind.GROUP).count()}


def recent_operations(*, host, limit: int = 5):
    return operations_of("directory", host=host)[:limit]


def dashboard_directory(*, hosts) -> dict:
    """The dashboard's panel: each joined host's domain (or LDAP directory) and whether it is healthy (two
    queries)."""
    rows = list(DomainMember.objects.filter(host__in=hosts).select_related("host").order_by("host__name"))
    ldap = list(LdapDirectory.objects.filter(host__in=hosts).select_related("host").order_by("host__name"))
    return {"extra_panels": [("directory/_dashboard.html", {"members": rows, "ldap": ldap})]} if rows or ldap else {}


def unhealthy(*, host) -> Q:
    return Q(host=host) & (Q(reachable=False) | Q(testjoin_ok=False) | Q(trust_ok=False) | Q(winbind_ok=False))
