"""The permissions app's reads: the folders Tarn can edit (the host's mounted filesystems, from the inventory) and
the recent walks."""

from permissions.models import AclWalk
from pools import selectors as pools


def mounted_names(*, host) -> list[str]:
    return pools.mounted_filesystem_names(host=host)


def recent_walks(*, host, limit: int = 10):
    return AclWalk.objects.filter(host=host).select_related("created_by")[:limit]
