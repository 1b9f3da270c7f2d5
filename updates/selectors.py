"""What the updates page reads: each host's last check, and the recent update operations."""

from appliance.fleet import OK, WARN, Cell
from appliance.selectors import operations_of
from updates.models import HostUpdates


def host_updates(host) -> HostUpdates | None:
    return HostUpdates.objects.filter(host=host).first() if host else None


def recent_operations(host, limit: int = 10):
    return operations_of("updates", host=host or None)[:limit]


def checked_hosts():
    """Every host's last check, for the roll-out's table."""
    return HostUpdates.objects.select_related("host").order_by("host__name")


def fleet_updates(*, hosts) -> dict:
    """Per checked host: its pending packages, security ones and a reboot asked for (one query)."""
    cells = {}
    for row in HostUpdates.objects.filter(host__in=hosts).only("host_id", "pending", "reboot", "checked_at"):
        security = sum(1 for p in row.pending if p.get("security"))
        words = [f"{len(row.pending)} pending" if row.pending else "up to date"]
        words += [f"{security} security"] * bool(security) + ["reboot asked"] * row.reboot
        level = WARN if security or row.reboot else OK
        cells[row.host_id] = Cell(
            ", ".join(words), -100 * security - len(row.pending) - row.reboot, level, href="/updates/"
        )
    return cells
