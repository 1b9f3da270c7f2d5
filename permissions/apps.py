"""The permissions app: who may open which folder of a dataset (POSIX ACLs: an editor that cannot lock people out,
applied to one folder or, after a preview, to everything inside), and who uses the space (user, group and project
quotas)."""

from django.apps import AppConfig


class PermissionsConfig(AppConfig):
    name = "permissions"

    def ready(self):
        import permissions.alerts  # noqa: F401, PLC0415 - registers its alert rules with analytics (hooks load in ready())
