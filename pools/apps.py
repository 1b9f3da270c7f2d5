"""The pools app: adds each host's pools to the dashboard, and reads a new host's storage when it is probed."""

from django.apps import AppConfig


class PoolsConfig(AppConfig):
    name = "pools"

    def ready(self):
        from appliance.dashboard import dashboard_panel  # noqa: PLC0415 - app registry hooks load in ready()
        from appliance.probes import probe_reader  # noqa: PLC0415
        from pools.selectors import dashboard_pools  # noqa: PLC0415
        from pools.services.inventory import inventory_first_read  # noqa: PLC0415

        dashboard_panel(dashboard_pools)
        probe_reader("Reading pools, disks, datasets and snapshots")(inventory_first_read)
