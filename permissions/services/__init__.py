"""The permissions app's services, by noun: folders (a folder read live from the host, what a user may do there), acls
(an ACL checked, resolved and written to one folder), walks (to everything inside: counted, applied, stopped),
quotas (read into Tarn's copy, set, cleared; a folder's project)."""

from permissions.services.acls import acl_check, acl_set_start
from permissions.services.folders import Place, effective_for, folder_children, folder_read, place
from permissions.services.quotas import (
    project_assign_start,
    quota_set_start,
    quotas_read,
    quotas_read_due,
    quotas_read_start,
)
from permissions.services.walks import walk_apply_start, walk_count_start, walk_stop

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
