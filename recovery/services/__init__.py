"""The recovery app's services, by noun: browsing (reads of a snapshot's folders and a file's versions) and
restores (a file or folder back, an Operation)."""

from recovery.services.browse import (
    Version,
    VersionPass,
    Where,
    changes,
    download,
    entry_of,
    folder_page,
    parts_of,
    text_path,
    versions,
    where,
)
from recovery.services.restores import restore_start, restore_stop, safety_snapshots_prune

__all__ = [
    "Version", "VersionPass", "Where", "changes", "download", "entry_of", "folder_page", "parts_of", "restore_start", "restore_stop", "safety_snapshots_prune", "text_path",
    "versions", "where",
]  # fmt: skip
