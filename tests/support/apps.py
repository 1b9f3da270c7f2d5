"""The product's own apps, read from the settings so a test that walks "every app" counts a new one too."""

from pathlib import Path

from appliance.apps import product_apps

ROOT = Path(__file__).resolve().parents[2]


def product_packages() -> list[str]:
    """Every top-level package of the product: the project (tarn), the apps and the host library."""
    return ["tarn", *product_apps(), "hostlib"]


def sources_with(*texts: str, besides: str) -> list[str]:
    """The product apps' modules (migrations and URL maps aside) that spell any of texts, except the one module
    (`besides`, a path from the checkout's root) whose job it is: where a shared helper is written again."""
    return [
        str(path.relative_to(ROOT))
        for app in product_apps()
        for path in sorted((ROOT / app).rglob("*.py"))
        if "migrations" not in path.parts and path.name != "urls.py" and path != ROOT / besides
        if any(text in path.read_text() for text in texts)
    ]
