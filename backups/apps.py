"""The backups app: Tarn's own configuration (its database, the secrets that open what it stored, its SSH key pair),
sealed with a passphrase into one file: made on demand or on a schedule, kept here and on a NAS, restored after a
dry run that shows what would change."""

from django.apps import AppConfig


class BackupsConfig(AppConfig):
    name = "backups"

    def ready(self):
        import backups.alerts  # noqa: F401, PLC0415 - registers its alert rule with analytics (hooks load in ready())
        from appliance.choices import Role  # noqa: PLC0415
        from appliance.dashboard import dashboard_panel  # noqa: PLC0415
        from backups import selectors  # noqa: PLC0415

        dashboard_panel(selectors.dashboard_backups, role=Role.ADMIN)  # its page is an admin's
