"""The analytics app: adds each host's last sample to the dashboard; registers the sign-in alert rule."""

from django.apps import AppConfig


class AnalyticsConfig(AppConfig):
    name = "analytics"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        import analytics.alerts  # noqa: F401, PLC0415 - registers the sign-in alert rule (hooks load in ready())
        from analytics.selectors import dashboard_live, fleet_alerts  # noqa: PLC0415 - app registry hooks load in ready()
        from appliance.dashboard import dashboard_panel  # noqa: PLC0415
        from appliance.fleet import fleet_column  # noqa: PLC0415

        dashboard_panel(dashboard_live)
        fleet_column("alerts", "Open alerts", fleet_alerts, help="Alerts raised and not cleared.")
