"""The product's own apps, read from the settings so a test that walks "every app" counts a new one too."""

from django.conf import settings


def product_apps() -> list[str]:
    """The product's Django apps in their layer order (INSTALLED_APPS entries of the form <app>.apps.<Config>)."""
    return [entry.split(".")[0] for entry in settings.INSTALLED_APPS if ".apps." in entry]
