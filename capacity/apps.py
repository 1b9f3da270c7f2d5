"""The capacity app: each pool's and dataset's use recorded every hour from the inventory, and the day it will be
full forecast from it (a trend that ignores one big copy, less what snapshot retention will free), on the pool page,
the dashboard, the API and as an alert."""

from django.apps import AppConfig


class CapacityConfig(AppConfig):
    name = "capacity"

    def ready(self):
        import capacity.alerts  # noqa: F401, PLC0415 - registers its alert rule with analytics (hooks load in ready())
        from appliance.dashboard import dashboard_panel  # noqa: PLC0415 - the registries are filled once apps load
        from appliance.fleet import fleet_column  # noqa: PLC0415
        from capacity import selectors  # noqa: PLC0415
        from pools.hooks import pool_panel  # noqa: PLC0415

        dashboard_panel(selectors.dashboard_forecasts)
        fleet_column(
            "forecast", "Forecast full", selectors.fleet_forecast, help="The pool to fill first, by its trend."
        )
        pool_panel(selectors.pool_forecast_panel)
