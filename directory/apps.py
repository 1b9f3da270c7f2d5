"""The directory app: this host as a member of an Active Directory domain (Samba's winbind), the domain's users and
groups listed for the shares, and the join's health watched and alerted."""

from django.apps import AppConfig


class DirectoryConfig(AppConfig):
    name = "directory"

    def ready(self):
        import directory.alerts  # noqa: F401, PLC0415 - registers its alert rules with analytics (hooks load in ready())
        from appliance.dashboard import dashboard_panel  # noqa: PLC0415
        from directory import selectors  # noqa: PLC0415

        dashboard_panel(selectors.dashboard_directory)
