"""The pools app: adds each host's pools to the dashboard."""

from django.apps import AppConfig


class PoolsConfig(AppConfig):
    name = "pools"

    def ready(self):
        from appliance.dashboard import dashboard_panel  # noqa: PLC0415 - app registry hooks load in ready()
        from pools.selectors import dashboard_pools  # noqa: PLC0415

        dashboard_panel(dashboard_pools)
