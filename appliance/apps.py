"""The core app's configuration: filling the operation-runner registry at start."""

from django.apps import AppConfig
from django.utils.module_loading import autodiscover_modules


class ApplianceConfig(AppConfig):
    name = "appliance"
    verbose_name = "Core"

    def ready(self):
        # Every app's services module registers its operation runners; a worker and a web process see the same set.
        autodiscover_modules("services")
