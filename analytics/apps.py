"""The analytics app: adds each host's last sample to the dashboard."""

from django.apps import AppConfig


class AnalyticsConfig(AppConfig):
    name = "analytics"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from analytics.selectors import dashboard_live  # noqa: PLC0415 - app registry hooks load in ready()
        from appliance.dashboard import dashboard_panel  # noqa: PLC0415

        dashboard_panel(dashboard_live)
