"""What every page's shell needs: navigation, the hosts for the switcher and the current one."""

from functools import cache

from django.urls import reverse

from appliance.choices import Role
from appliance.selectors import host_current, host_list

NAV = [
    ("Dashboard", "dashboard"),
    ("Pools", "pool-list"),
    ("Disk health", "health-list"),
    ("Encryption", "encryption-list"),
    ("Shares", "share-list"),
    ("Network & tuning", "tuning-overview"),  # links, MTU and bridges live there too
    ("Replication", "replication-list"),
    ("Benchmarks", "benchmark-list"),
    ("Analytics", "analytics"),
    ("Hosts", "host-list"),
    ("Backups", "backup-list"),  # admins only (ADMIN_ONLY)
    ("Operations", "operation-list"),
    ("Audit", "audit-list"),
]


ADMIN_ONLY = {"Backups"}  # a backup holds every secret Tarn keeps


@cache
def _nav_urls() -> tuple[tuple[str, str], ...]:
    return tuple((label, reverse(name)) for label, name in NAV)


def shell(request):
    if not getattr(request, "user", None) or not request.user.is_authenticated:
        return {}
    admin = request.user.is_authenticated and request.user.has_role(Role.ADMIN)
    nav = [(label, url, request.path == url) for label, url in _nav_urls() if admin or label not in ADMIN_ONLY]
    return {"nav": nav, "shell_hosts": host_list(request), "current_host": host_current(request)}
