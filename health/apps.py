"""The health app: SMART reads of every disk, self-tests, and the alerts that come before a pool degrades."""

from django.apps import AppConfig


class HealthConfig(AppConfig):
    name = "health"

    def ready(self):
        import health.alerts  # noqa: F401, PLC0415 - registers its alert rules with analytics (app registry hooks load in ready())
        from appliance.dashboard import dashboard_panel  # noqa: PLC0415
        from appliance.fleet import fleet_column  # noqa: PLC0415
        from health import selectors  # noqa: PLC0415
        from pools.hooks import disk_notes  # noqa: PLC0415

        dashboard_panel(selectors.dashboard_health)
        fleet_column("disks", "Disks", selectors.fleet_disks, help="SMART: failing or not answering, to watch, well.")
        disk_notes(selectors.disk_notes)
