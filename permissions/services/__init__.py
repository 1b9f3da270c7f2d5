"""The permissions app's writes, by noun: acls (a folder's ACL read, checked and written; the walk that applies it
to everything inside), quotas (read into Tarn's copy, set, cleared; a folder's project)."""

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
from permissions.services.quotas import (
    project_assign_start,
    quota_set_start,
    quotas_read,
    quotas_read_due,
    quotas_read_start,
)

__all__ = [
    "project_assign_start",
    "quota_set_start",
    "quotas_read",
    "quotas_read_due",
    "quotas_read_start",
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
