"""The inventory at scale (issue 46): a refresh that reads what it read last time touches no snapshot row and parses
no dataset entry; a changed dataset's snapshots alone are compared; rows keep their ids; a listing out of order
changes nothing. On the lab's captured `zfs list` output."""

import json
from pathlib import Path

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from hostlib import zfs
from pools.models import Dataset, Pool, Snapshot
from pools.services import inventory

LISTING = Path(__file__).parents[1] / "fixtures" / "host" / "zfs_list.json"


@pytest.fixture
def pool(local_host):
    return Pool.objects.create(host=local_host, name="tank", guid="1", state="ONLINE", observed_at=timezone.now())


def listing() -> str:
    raw = json.loads(LISTING.read_text())
    raw["datasets"] = {k: v for k, v in raw["datasets"].items() if "@" not in k}
    return json.dumps(raw)


def snapshots(used: int = 1, skip: str = "") -> str:
    names = [n for n, _ in zfs.iter_list(listing()) if n != skip]
    return "".join(f"{n}@s{i}\t{used}\t{i}\t1700000000\t0\t{i + 1}\n" for n in names for i in range(3))


def save(pool, datasets: str, snaps: str) -> list[str]:
    """The SQL a save ran."""
    with CaptureQueriesContext(connection) as queries, transaction.atomic():
        inventory._save_datasets(pool.host, pool, "tank", None, datasets, snaps, timezone.now())
    return [q["sql"] for q in queries.captured_queries]


def ids():
    return list(Dataset.objects.order_by("pk").values_list("pk", "name")), sorted(
        Snapshot.objects.values_list("pk", flat=True)
    )


@pytest.mark.django_db
def test_an_unchanged_refresh_reads_no_snapshot_row_and_rewrites_no_dataset(pool):
    save(pool, listing(), snapshots())
    first = ids()
    assert Snapshot.objects.count() == 9 and set(Dataset.objects.values_list("snapshot_count", flat=True)) == {3}
    sql = save(pool, listing(), snapshots())
    assert ids() == first
    assert not [q for q in sql if "pools_snapshot" in q], sql
    assert not [q for q in sql if q.startswith("INSERT")], sql
    assert [q for q in sql if q.startswith("UPDATE")] and all("observed_at" in q for q in sql if q.startswith("UPDATE"))


@pytest.mark.django_db
def test_a_changed_datasets_snapshots_alone_are_compared_and_rows_keep_their_ids(pool):
    save(pool, listing(), snapshots())
    first = ids()
    vol = Dataset.objects.get(name="tank/vol")
    changed = snapshots().replace("tank/vol@s1\t1\t", "tank/vol@s1\t4096\t")
    sql = save(pool, listing(), changed)
    assert ids() == first
    assert Snapshot.objects.get(dataset=vol, name="s1").used == 4096
    reads = [q for q in sql if q.startswith("SELECT") and "pools_snapshot" in q]
    assert reads and all(f"IN ({vol.pk})" in q or f"= {vol.pk}" in q for q in reads), reads


@pytest.mark.django_db
def test_a_dataset_whose_snapshots_are_gone_loses_their_rows_and_its_count(pool):
    save(pool, listing(), snapshots())
    save(pool, listing(), snapshots(skip="tank/vol"))
    vol = Dataset.objects.get(name="tank/vol")
    assert vol.snapshot_count == 0 and not Snapshot.objects.filter(dataset=vol).exists()
    assert Snapshot.objects.count() == 6
    save(pool, listing(), snapshots())  # back again: read again (its digest is the empty listing's)
    assert Dataset.objects.get(name="tank/vol").snapshot_count == 3


@pytest.mark.django_db
def test_a_changed_dataset_entry_is_written_and_a_gone_one_deleted(pool):
    save(pool, listing(), snapshots())
    raw = json.loads(listing())
    raw["datasets"]["tank/data"]["properties"]["used"]["value"] = 12345
    del raw["datasets"]["tank/vol"]
    save(pool, json.dumps(raw), snapshots(skip="tank/vol"))
    assert Dataset.objects.get(name="tank/data").used == 12345
    assert not Dataset.objects.filter(name="tank/vol").exists()


@pytest.mark.django_db
def test_a_listing_out_of_order_is_refused_and_changes_nothing(pool):
    save(pool, listing(), snapshots())
    first = ids()
    split = snapshots(used=7) + "tank@late\t1\t2\t1700000000\t0\t9\n"
    with pytest.raises(ValueError, match="two places"):
        save(pool, listing(), split)
    assert ids() == first and set(Snapshot.objects.values_list("used", flat=True)) == {1}
