"""The house's shape, checked as code: only hostlib/ builds argv or imports subprocess (the import contract in
pyproject.toml keeps the layers; `lint-imports` runs it in make test's lint step). What is checked is derived from
INSTALLED_APPS, so a new app is covered the day it is added."""

import ast

from tests.support.apps import ROOT, product_apps

APPS = ["tarn", *product_apps()]  # every package but hostlib/


def _sources():
    for app in APPS:
        for path in sorted((ROOT / app).rglob("*.py")):
            if "migrations" not in path.parts:
                yield path, ast.parse(path.read_text(), str(path))


def argv_runs(tree) -> list[int]:
    """Lines of `<anything>.run([...])`: a command spelled at the call site instead of a hostlib verb."""
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "run"
        and node.args
        and isinstance(node.args[0], ast.List | ast.ListComp)
    ]


def subprocess_imports(tree) -> list[int]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            modules = [node.module or ""]
        else:
            continue
        found += [node.lineno for m in modules if m.split(".")[0] == "subprocess"]
    return found


def test_no_argv_is_built_outside_hostlib():
    found = [f"{path.relative_to(ROOT)}:{n}" for path, tree in _sources() for n in argv_runs(tree)]
    assert not found, f"argv built outside hostlib/ (add a verb there): {found}"


def test_only_hostlib_imports_subprocess():
    found = [f"{path.relative_to(ROOT)}:{n}" for path, tree in _sources() for n in subprocess_imports(tree)]
    assert not found, f"subprocess imported outside hostlib/: {found}"


def test_the_checks_find_what_they_look_for():
    planted = ast.parse("import subprocess\nfrom subprocess import run\nt.run(['zfs', 'list'])\nt.run(zfs.argv())\n")
    assert argv_runs(planted) == [3]
    assert subprocess_imports(planted) == [1, 2]


def test_every_app_is_looked_at():
    assert {"tarn", "appliance", "pools", "health", "encryption", "backups"} <= set(APPS)
    assert "hostlib" not in APPS and not {"django", "rest_framework"} & {a.split(".")[0] for a in APPS}
