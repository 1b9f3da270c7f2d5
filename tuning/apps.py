"""The tuning app: reads a new host's links and kernel values when it is probed."""

from django.apps import AppConfig


class TuningConfig(AppConfig):
    name = "tuning"

    def ready(self):
        from appliance.probes import probe_reader  # noqa: PLC0415 - app registry hooks load in ready()
        from tuning.services.inventory import tuning_refresh  # noqa: PLC0415

        probe_reader("Reading links and kernel values")(tuning_refresh)
