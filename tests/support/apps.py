"""The product's own apps, read from the settings so a test that walks "every app" counts a new one too."""

from pathlib import Path

from django.conf import settings


def product_apps() -> list[str]:
    """The product's Django apps in their layer order (INSTALLED_APPS entries of the form <app>.apps.<Config>)."""
    return [entry.split(".")[0] for entry in settings.INSTALLED_APPS if ".apps." in entry]


def sources_with(*texts: str, besides: str) -> list[str]:
    """The product apps' modules (migrations and URL maps aside) that spell any of texts, except the one module
    (`besides`, a path from the checkout's root) whose job it is: where a shared helper is written again."""
    root = Path(__file__).resolve().parents[2]
    return [
        str(path.relative_to(root))
        for app in product_apps()
        for path in sorted((root / app).rglob("*.py"))
        if "migrations" not in path.parts and path.name != "urls.py" and path != root / besides
        if any(text in path.read_text() for text in texts)
    ]
