"""Reads of the recovery app for its pages: the filesystems a host can browse and a dataset's snapshots, from the
inventory (through the pools app's selectors)."""

from django.core.paginator import Paginator

from pools import selectors as pools
from recovery.models import Restore


def browsable(*, host) -> list[tuple[str, str]]:
    """(name, mount point) of the host's mounted filesystems."""
    return pools.mounted_filesystem_mounts(host=host) if host else []


def snapshot_page(*, dataset, page, per_page: int = 25):
    """A dataset's snapshots, newest first, a page at a time."""
    return Paginator(pools.snapshots_of(dataset=dataset), per_page).get_page(page)


def recent_restores(*, host, dataset: str, limit: int = 10):
    """The dataset's latest restores, newest first (the running ones with their progress and Stop)."""
    return Restore.objects.filter(host=host, dataset=dataset).select_related("operation")[:limit]
