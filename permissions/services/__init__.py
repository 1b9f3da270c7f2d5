"""The permissions app's writes, by noun: acls (a folder's ACL read, checked and written; the walk that applies it
to everything inside)."""

from permissions.services.acls import (
    Place,
    acl_check,
    acl_set_start,
    effective_for,
    folder_children,
    folder_read,
    place,
    walk_apply_start,
    walk_count_start,
    walk_stop,
)

__all__ = [
    "Place",
    "acl_check",
    "acl_set_start",
    "effective_for",
    "folder_children",
    "folder_read",
    "place",
    "walk_apply_start",
    "walk_count_start",
    "walk_stop",
]
