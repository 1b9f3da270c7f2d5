"""Operation kinds carry their app's label (`backups.restore`, not `config.restore`), so a kind says whose it is; the
rows made under an old name follow it through the app's data migration (appliance.kinds), and back."""

import importlib

import pytest
from django.apps import apps

from appliance.models import Operation
from appliance.operations import RUNNERS
from appliance.titles import TITLES
from tests.appliance.test_operation_titles import SHARED_RUNNERS
from tests.support.apps import product_apps

MIGRATIONS = [
    "appliance.migrations.0011_operation_kinds",
    "pools.migrations.0010_operation_kinds",
    "shares.migrations.0004_operation_kinds",
    "backups.migrations.0003_operation_kinds",
    "benchmarks.migrations.0005_operation_kinds",
]


def test_every_kind_starts_with_its_apps_label():
    declared = {kind: fn.__module__.split(".")[0] for kind, fn in RUNNERS.items()}
    wrong = sorted(kind for kind, app in declared.items() if app in product_apps() and not kind.startswith(f"{app}."))
    assert not wrong


def test_every_titled_kind_starts_with_an_apps_label():
    """Kinds a shared runner runs (pools.dataset_create under pools.command) are declared by their title alone."""
    assert not sorted(kind for kind in TITLES if kind.split(".")[0] not in product_apps())


def _now(rows) -> list[tuple[str, str]]:
    return [(row.kind, row.runner) for row in (Operation.objects.get(pk=r.pk) for r in rows)]


@pytest.mark.parametrize("name", MIGRATIONS)
def test_rows_of_the_old_kinds_are_renamed_and_back(db, name):
    migration = importlib.import_module(name)
    step = migration.Migration.operations[0]
    renamed = list(migration.RENAMED.values())
    old = [Operation.objects.create(kind=kind, target=f"tarn:{kind}", status="succeeded") for kind in migration.RENAMED]
    # a row run by a shared runner names it in runner (pools.dataset_create run by pools.command)
    run_by = [Operation.objects.create(kind="x.y", runner=k, target=f"by:{k}") for k in migration.RENAMED]
    other = Operation.objects.create(kind="shares.apply", target="x", status="succeeded")
    step.code(apps, None)
    assert _now(old) == [(new, "") for new in renamed] and _now(run_by) == [("x.y", new) for new in renamed]
    # what the runners declare, each titled (but a shared runner: the kinds it runs are)
    assert set(renamed) <= (set(RUNNERS) | set(TITLES)) & (set(TITLES) | SHARED_RUNNERS)
    assert _now([other]) == [("shares.apply", "")]
    step.reverse_code(apps, None)
    assert _now(old) == [(k, "") for k in migration.RENAMED] and _now(run_by) == [("x.y", k) for k in migration.RENAMED]
