"""What every page's shell needs: navigation, the hosts for the switcher and the current one."""

from functools import cache
from typing import NamedTuple

from django.urls import reverse

from appliance.choices import Role
from appliance.selectors import host_current, host_list

# The top bar: groups the way admins look for things (as TrueNAS and Cockpit do), each (label, url name) a link.
# A new page is one line here. A group holding only itself (Dashboard) is a plain link, not a menu.
NAV = [
    ("Dashboard", [("Dashboard", "dashboard")]),
    (
        "Storage",
        [
            ("Pools", "pool-list"),
            ("Disks", "disk-list"),
            ("Snapshots", "snapshot-list"),
            ("Snapshot schedules", "snapshot-task-list"),
            ("Browse snapshots", "recovery-browse"),
            ("Capacity forecast", "capacity-list"),
        ],
    ),
    (
        "Sharing",
        [
            ("Shares", "share-list"),
            ("iSCSI", "iscsi-page"),  # zvols as disks for VMs and servers
            ("Permissions", "permissions-page"),
            ("Quotas", "quota-page"),
            ("Directory", "directory-page"),
        ],
    ),  # the directory: the domain's users, for the shares and ACLs
    ("Network", [("Network & tuning", "tuning-overview")]),  # links, MTU and bridges live there too
    (
        "Protection",
        [
            ("Replication", "replication-list"),
            ("Disk health", "health-list"),  # SMART self-tests and scrubs
            ("Encryption", "encryption-list"),
            ("Backups", "backup-list"),  # admins only (ADMIN_ONLY)
            ("UPS", "ups-page"),  # the power: its state, the shutdown policy
        ],
    ),
    (
        "System",
        [
            ("Hosts", "host-list"),
            ("Fleet", "fleet"),  # every host at a glance
            ("Certificates", "certificate-page"),  # admins only (ADMIN_ONLY)
            ("Updates", "updates-page"),  # admins only (ADMIN_ONLY)
            ("Analytics", "analytics"),
            ("Benchmarks", "benchmark-list"),
            ("Operations", "operation-list"),
            ("Audit", "audit-list"),
        ],
    ),
]

ADMIN_ONLY = {"backup-list", "certificate-page", "updates-page"}  # every secret Tarn keeps; the HTTPS key; root's apt
OPERATOR_ONLY = {"recovery-browse"}  # the files inside snapshots: their names are data a viewer does not read


class NavLink(NamedTuple):
    label: str
    url: str
    current: str  # the aria-current value: "page" on the page itself, "true" on a page below it, "" elsewhere


class NavGroup(NamedTuple):
    label: str
    links: list[NavLink]
    current: bool  # the group holds the current section

    @property
    def single(self) -> bool:
        return len(self.links) == 1 and self.links[0].label == self.label


@cache
def _nav_urls() -> tuple[tuple[str, tuple[tuple[str, str, str], ...]], ...]:
    return tuple((group, tuple((label, name, reverse(name)) for label, name in links)) for group, links in NAV)


def _section(path: str) -> str:
    """The URL of the navigation entry the page belongs to: the longest one its path starts with ("/" only itself)."""

    urls = [url for _, links in _nav_urls() for _, _, url in links]
    return max((url for url in urls if path == url or (url != "/" and path.startswith(url))), key=len, default="")


def nav_for(path: str, admin: bool, operator: bool = True) -> list[NavGroup]:
    section = _section(path)
    groups = []
    for group, entries in _nav_urls():
        links = [
            NavLink(label, url, ("page" if path == url else "true") if url == section else "")
            for label, name, url in entries
            if (admin or name not in ADMIN_ONLY) and (operator or name not in OPERATOR_ONLY)
        ]
        if links:
            groups.append(NavGroup(group, links, any(link.current for link in links)))
    return groups


def shell(request):
    if not getattr(request, "user", None) or not request.user.is_authenticated:
        return {}
    user = request.user
    nav = nav_for(request.path, admin=user.has_role(Role.ADMIN), operator=user.has_role(Role.OPERATOR))
    return {"nav": nav, "shell_hosts": host_list(request), "current_host": host_current(request)}
