"""The core app's configuration: filling the operation-runner and operation-title registries at start."""

from django.apps import AppConfig
from django.utils.module_loading import autodiscover_modules


class ApplianceConfig(AppConfig):
    name = "appliance"
    verbose_name = "Core"

    def ready(self):
        # Every app's services module registers its operation runners; a worker and a web process see the same set.
        # Its titles module says what each kind is called on its pages (after the runners: it reads their locks).
        autodiscover_modules("services")
        autodiscover_modules("titles")
