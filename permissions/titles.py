"""What the permissions operations are called on their pages, and the page each came from."""

from appliance.titles import Title, operation_titles

PERMISSIONS = {"back": "permissions-page", "back_label": "Back to Permissions"}
QUOTAS = {"back": "quota-page", "back_label": "Back to Quotas"}

operation_titles(
    {
        "permissions.acl_set": Title("Set the ACL of {dataset}/{path}", **PERMISSIONS),
        "permissions.walk_count": Title("Count what an ACL would change in {dataset}", **PERMISSIONS),
        "permissions.walk_apply": Title("Apply an ACL to everything in a folder of {dataset}", **PERMISSIONS),
        "permissions.quota_read": Title("Read the quotas", **QUOTAS),
        "permissions.quota_set": Title("Set {kind} {name}'s quota on {dataset}", **QUOTAS),
        "permissions.project_set": Title("Make {dataset}/{path} project {project}", **QUOTAS),
    }
)
