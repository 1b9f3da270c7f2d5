"""The lists that name every app, derived or checked against INSTALLED_APPS: a new app that one of them misses
fails here, the day it is added (the layout tests and the access table walk the apps and routes themselves)."""

import re
import tomllib

from tests.support.apps import ROOT, product_apps, product_packages

CONTRACTS = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]


def readme_map(text: str) -> list[str]:
    """The names down the left of the README's map ("How it is built"), in order."""
    block = text.split("## How it is built", 1)[1].split("```", 2)[1]
    return [m.group(1) for line in block.splitlines() if (m := re.match(r"([a-z_]+)/?\s", line))]


def layer_names(layers: list[str]) -> list[str]:
    """Every package a layers contract names; siblings in one layer are written `a | b` (or `a : b`)."""
    return [name.strip() for layer in layers for name in re.split(r"[|:]", layer)]


def test_the_readme_map_shows_every_package():
    assert sorted(readme_map((ROOT / "README.md").read_text())) == sorted(product_packages())


def test_the_import_contracts_name_every_package():
    assert sorted(CONTRACTS["root_packages"]) == sorted(product_packages())
    layers = next(c for c in CONTRACTS["contracts"] if c["type"] == "layers" and "tarn" in layer_names(c["layers"]))
    assert sorted(layer_names(layers["layers"])) == sorted(product_packages())
    project = next(c for c in CONTRACTS["contracts"] if c.get("forbidden_modules") == ["tarn"])
    assert sorted(project["source_modules"]) == sorted(product_apps())


def test_the_checks_catch_a_missing_app():
    assert readme_map("## How it is built\n\n```\ntarn/  x\npools  y\n```\n") == ["tarn", "pools"]
    assert layer_names(["tarn", "health | encryption", "pools : shares"]) == [
        "tarn",
        "health",
        "encryption",
        "pools",
        "shares",
    ]
    assert (
        "health" in product_apps() and "hostlib" in product_packages() and "django.contrib.auth" not in product_apps()
    )
