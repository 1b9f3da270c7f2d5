"""The replication app: snapshots sent NAS to NAS over a pair's own key."""

from django.apps import AppConfig


class ReplicationConfig(AppConfig):
    name = "replication"

    def ready(self):
        import replication.alerts  # noqa: F401, PLC0415 - registers its alert rules with analytics (app registry hooks load in ready())
        from appliance.dashboard import dashboard_panel  # noqa: PLC0415
        from appliance.fleet import fleet_column  # noqa: PLC0415
        from replication.selectors import dashboard_replication, fleet_replication  # noqa: PLC0415

        dashboard_panel(dashboard_replication)
        fleet_column("replication", "Replication", fleet_replication, help="Its tasks' last good send (the lag).")
