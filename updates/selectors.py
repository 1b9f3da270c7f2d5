"""What the updates page reads: each host's last check, and the recent update operations."""

from appliance.models import Operation
from updates.models import HostUpdates


def host_updates(host) -> HostUpdates | None:
    return HostUpdates.objects.filter(host=host).first() if host else None


def recent_operations(host, limit: int = 10):
    found = Operation.objects.filter(kind__startswith="updates.").select_related("user", "host").order_by("-id")
    return found.filter(host=host)[:limit] if host else found[:limit]


def checked_hosts():
    """Every host's last check, for the roll-out's table."""
    return HostUpdates.objects.select_related("host").order_by("host__name")
