"""The analytics app: adds each host's last sample to the dashboard; registers the sign-in alert rule."""

from django.apps import AppConfig


class AnalyticsConfig(AppConfig):
    name = "analytics"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        import analytics.alerts  # noqa: F401, PLC0415 - registers the sign-in alert rule (hooks load in ready())
        from analytics.selectors import dashboard_live  # noqa: PLC0415 - app registry hooks load in ready()
        from appliance.dashboard import dashboard_panel  # noqa: PLC0415

        dashboard_panel(dashboard_live)
