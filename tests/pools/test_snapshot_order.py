"""Snapshots are ordered by the transaction group that made them (createtxg), not by creation: creation has
one-second resolution (a recursive or scheduled set, or two on a fast host, tie) and follows the clock. The inventory
reads createtxg in the one `zfs list` it already runs; rollback, retention and "newest" go by it."""

from datetime import UTC, datetime, timedelta

import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone

from hostlib import zfs
from pools import selectors, services
from pools.models import Dataset, Pool, Snapshot, SnapshotTask
from pools.services import Scope
from tests.support.runners import FakeHost, captured

SAME_SECOND = "zfs_snapshots_same_second.txt"  # tank/data@same-1 and @same-2: one creation, two txgs


def test_the_listing_asks_for_createtxg_and_the_parser_keeps_it():
    assert zfs.list_snapshots_argv("tank/data", 1)[7] == "name,used,referenced,creation,userrefs,createtxg"
    snaps = {s.name: s for s in zfs.parse_snapshots(captured(SAME_SECOND))}
    one, two = snaps["same-1"], snaps["same-2"]
    assert one.creation == two.creation and one.createtxg < two.createtxg  # what the capture was made to show
    (old,) = zfs.parse_snapshots("tank/a@s1\t0\t24576\t1795333245\t2")  # a listing without createtxg still reads
    assert (old.holds, old.createtxg) == (2, 0)


@pytest.fixture
def inventory(local_host, monkeypatch):
    """tank/data's snapshots read through the inventory from the captured listing (a FakeHost answers)."""
    fake = FakeHost()
    fake.answer("zpool", "status", stdout=captured("zpool_status.json"))
    fake.answer("zpool", "list", stdout=captured("zpool_list.json"))
    fake.answer("zfs", "list", "-j", stdout=captured("zfs_get.json"))
    fake.answer("zfs", "list", "-H", "-p", "-t", "snapshot", stdout=captured(SAME_SECOND))
    fake.install(monkeypatch)
    services.inventory_refresh(host=local_host, scope=Scope(datasets=["tank/data"]))
    return {s.name: s for s in Snapshot.objects.filter(dataset__name="tank/data")}


def test_the_inventory_stores_each_snapshots_createtxg(inventory):
    assert {n: s.createtxg for n, s in inventory.items()} == {"first": 13, "same-1": 14, "same-2": 15}
    assert inventory["same-1"].created_at == inventory["same-2"].created_at


def test_rolling_back_past_a_snapshot_of_the_same_second_asks_first(inventory, admin_user):
    with pytest.raises(ValidationError, match="destroys 1 newer snapshot"):
        services.snapshot_rollback_start(
            host=inventory["same-1"].host, user=admin_user, snapshot="tank/data@same-1", destroy_newer=False
        )
    with pytest.raises(ValidationError, match="destroys 2 newer snapshots"):
        services.snapshot_rollback_start(
            host=inventory["first"].host, user=admin_user, snapshot="tank/data@first", destroy_newer=False
        )


def snapshots(local_host, rows):
    """A dataset with snapshots (name, seconds after a fixed instant, createtxg), saved in the order given."""
    now = timezone.now()
    pool = Pool.objects.create(host=local_host, name="tank", guid="1", state="ONLINE", observed_at=now)
    data = Dataset.objects.create(host=local_host, pool=pool, name="tank/data", type="filesystem", observed_at=now)
    start = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)
    for name, second, txg in rows:
        Snapshot.objects.create(dataset=data, name=name, created_at=start + timedelta(seconds=second), createtxg=txg)
    return data


def test_the_newest_of_a_dataset_is_its_last_transaction_group(local_host):
    data = snapshots(local_host, [("two", 0, 20), ("one", 0, 10), ("zero", -5, 5)])  # two saved before one
    assert selectors.snapshot_names(host=local_host, dataset="tank/data") == ["zero", "one", "two"]
    assert [s.name for s in selectors.snapshot_recent(dataset=data)] == ["two", "one", "zero"]


@pytest.mark.parametrize(
    "rows",
    [
        [("auto-b", 0, 20), ("auto-a", 0, 10)],  # one second (a row saved first is not the older)
        [("auto-b", 0, 20), ("auto-a", 30, 10)],  # the clock stepped back between the two
    ],
)
def test_retention_prunes_the_older_by_transaction_group(local_host, rows):
    snapshots(local_host, rows)
    task = SnapshotTask.objects.create(host=local_host, dataset="tank/data", prefix="auto", keep_count=1)
    assert [s.name for s in selectors.retention_victims(task=task, now=timezone.now())] == ["auto-a"]


def test_a_clock_stepped_back_does_not_hide_a_newer_snapshot_from_rollback(local_host, admin_user):
    snapshots(local_host, [("one", 30, 10), ("two", 0, 20)])
    with pytest.raises(ValidationError, match="destroys 1 newer snapshot"):
        services.snapshot_rollback_start(
            host=local_host, user=admin_user, snapshot="tank/data@one", destroy_newer=False
        )


def test_rows_read_before_createtxg_was_kept_count_a_same_second_snapshot_as_newer(local_host, admin_user):
    snapshots(local_host, [("one", 0, 0), ("two", 0, 0), ("older", -60, 0)])
    with pytest.raises(ValidationError, match="destroys 1 newer snapshot"):
        services.snapshot_rollback_start(
            host=local_host, user=admin_user, snapshot="tank/data@one", destroy_newer=False
        )
    assert selectors.snapshot_names(host=local_host, dataset="tank/data")[0] == "older"
