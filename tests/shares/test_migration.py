"""Shares moved from the pools app to their own: a database that has shares keeps every row and id."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [("pools", "0007_scrub_schedule"), ("shares", None)]


def migrate(targets, state):
    """Migrate the test database to targets; the models as they were at state."""
    executor = MigrationExecutor(connection)
    executor.migrate(targets)
    return MigrationExecutor(connection).loader.project_state(state).apps


@pytest.mark.django_db(transaction=True)
def test_shares_keep_their_rows_when_they_move_to_their_own_app():
    old = migrate(BEFORE, BEFORE[:1])
    host = old.get_model("appliance", "Host").objects.create(name="nas", transport="local", address="localhost")
    share = old.get_model("pools", "SmbShare").objects.create(
        host=host, name="docs", dataset="tank/docs", path="/tank/docs"
    )
    export = old.get_model("pools", "NfsExport").objects.create(
        host=host, dataset="tank/docs", path="/tank/docs", clients="10.0.0.0/24"
    )
    old.get_model("pools", "SambaUser").objects.create(host=host, username="alice")
    old.get_model("pools", "ShareSettings").objects.create(host=host, workgroup="LAB")

    latest = MigrationExecutor(connection).loader.graph.leaf_nodes()
    new = migrate(latest, latest)
    assert new.get_model("shares", "SmbShare").objects.get(pk=share.pk).name == "docs"
    assert new.get_model("shares", "NfsExport").objects.get(pk=export.pk).clients == "10.0.0.0/24"
    assert new.get_model("shares", "SambaUser").objects.get().username == "alice"
    assert new.get_model("shares", "ShareSettings").objects.get(host_id=host.pk).workgroup == "LAB"
    tables = connection.introspection.table_names()
    assert "shares_smbshare" in tables and "pools_smbshare" not in tables
