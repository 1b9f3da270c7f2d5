"""The updates app: each host's pending packages (apt, simulated), applied as an Operation, with the guard that
holds a kernel that would boot without its ZFS module (hostlib.updates)."""

from django.apps import AppConfig


class UpdatesConfig(AppConfig):
    name = "updates"

    def ready(self):
        from appliance.choices import Role  # noqa: PLC0415
        from appliance.fleet import fleet_column  # noqa: PLC0415 - app registry hooks load in ready()
        from updates.selectors import fleet_updates  # noqa: PLC0415

        fleet_column("updates", "Updates", fleet_updates, role=Role.ADMIN, help="Pending packages (its page: admins).")
