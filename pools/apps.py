"""The pools app: adds each host's pools to the dashboard and the fleet page, and reads a new host's storage when it
is probed."""

from django.apps import AppConfig


class PoolsConfig(AppConfig):
    name = "pools"

    def ready(self):
        from appliance.dashboard import dashboard_panel  # noqa: PLC0415 - app registry hooks load in ready()
        from appliance.fleet import fleet_column  # noqa: PLC0415
        from appliance.probes import probe_reader  # noqa: PLC0415
        from pools.selectors import dashboard_pools, fleet_capacity, fleet_pools  # noqa: PLC0415
        from pools.services.inventory import inventory_first_read  # noqa: PLC0415

        dashboard_panel(dashboard_pools)
        fleet_column("pools", "Pools", fleet_pools, help="Its pools; any not ONLINE or with errors named.")
        fleet_column("capacity", "Fullest pool", fleet_capacity, help="Allocated of the fullest pool.")
        probe_reader("Reading pools, disks, datasets and snapshots")(inventory_first_read)
