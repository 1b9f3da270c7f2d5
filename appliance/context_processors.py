"""What every page's shell needs: navigation, the hosts for the switcher and the current one."""

from functools import cache

from django.urls import reverse

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
    ("Operations", "operation-list"),
    ("Audit", "audit-list"),
]


@cache
def _nav_urls() -> tuple[tuple[str, str], ...]:
    return tuple((label, reverse(name)) for label, name in NAV)


def shell(request):
    if not getattr(request, "user", None) or not request.user.is_authenticated:
        return {}
    nav = [(label, url, request.path == url) for label, url in _nav_urls()]
    return {"nav": nav, "shell_hosts": host_list(request), "current_host": host_current(request)}
