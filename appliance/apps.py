"""The core app's configuration: filling the operation-runner and operation-title registries at start."""

from pathlib import Path

from django.apps import AppConfig, apps
from django.conf import settings
from django.utils.module_loading import autodiscover_modules


def product_apps() -> list[str]:
    """Tarn's own apps in INSTALLED_APPS order: those whose package lives in this checkout (not Django's, DRF's or
    any other installed library's). Every list of "the apps" is this one, so a new app counts the day it is added."""
    return [c.name for c in apps.get_app_configs() if Path(c.path).resolve().parent == settings.BASE_DIR]


class ApplianceConfig(AppConfig):
    name = "appliance"
    verbose_name = "Core"

    def ready(self):
        # Every app's services module registers its operation runners; a worker and a web process see the same set.
        # Its titles module says what each kind is called on its pages (after the runners: it reads their locks).
        autodiscover_modules("services")
        autodiscover_modules("titles")
