"""Operation kinds carry their app's label (`backups.restore`, not `config.restore`), so a kind says whose it is; the
rows made under an old name follow it through the app's data migration (appliance.kinds), and back."""

import importlib

import pytest
from django.apps import apps

from appliance.models import Operation
from appliance.operations import RUNNERS
from appliance.titles import TITLES
from tests.support.apps import product_apps

# Not renamed yet: the core's host.probe; pools' kinds, named by noun (pool.*, dataset.*, snapshot.*, storage.command,
# inventory.refresh); shares' samba.user.*.
NOT_YET = {"appliance", "pools", "shares"}
MIGRATIONS = ["backups.migrations.0003_operation_kinds", "benchmarks.migrations.0005_operation_kinds"]


def test_every_kind_starts_with_its_apps_label():
    declared = {kind: fn.__module__.split(".")[0] for kind, fn in RUNNERS.items()}
    wrong = sorted(
        kind
        for kind, app in declared.items()
        if app in product_apps() and app not in NOT_YET and not kind.startswith(f"{app}.")
    )
    assert not wrong


@pytest.mark.parametrize("name", MIGRATIONS)
def test_rows_of_the_old_kinds_are_renamed_and_back(db, name):
    migration = importlib.import_module(name)
    step = migration.Migration.operations[0]
    old = [Operation.objects.create(kind=kind, target=f"tarn:{kind}", status="succeeded") for kind in migration.RENAMED]
    other = Operation.objects.create(kind="shares.apply", target="x", status="succeeded")
    step.code(apps, None)
    assert [Operation.objects.get(pk=op.pk).kind for op in old] == list(migration.RENAMED.values())
    assert set(migration.RENAMED.values()) <= set(RUNNERS) & set(TITLES)  # what the runners declare, each titled
    assert Operation.objects.get(pk=other.pk).kind == "shares.apply"
    step.reverse_code(apps, None)
    assert [Operation.objects.get(pk=op.pk).kind for op in old] == list(migration.RENAMED)
