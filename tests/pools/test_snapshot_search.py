"""The snapshot list's filter at scale (issue 46): every filter served by an index, and the answer the same whichever
way the query runs: a dataset's name or part of it, dataset@start, a snapshot name's start (case kept), few or many."""

from datetime import timedelta

import pytest
from django.utils import timezone

from appliance.models import Host
from pools import selectors
from pools.models import Dataset, Pool, Snapshot


@pytest.fixture
def snapshots(local_host):
    now = timezone.now()
    pool = Pool.objects.create(host=local_host, name="tank", guid="1", state="ONLINE", observed_at=now)
    other = Host.objects.create(name="nas2", address="192.0.2.2")
    pool2 = Pool.objects.create(host=other, name="tank", guid="2", state="ONLINE", observed_at=now)
    made = 0
    for host, p in ((local_host, pool), (other, pool2)):
        for d in ("tank/a", "tank/b", "tank/bs3"):
            ds = Dataset.objects.create(host=host, pool=p, name=d, type="filesystem", observed_at=now)
            for n in ("s1", "s3", "s30", "S3x", "t3"):
                made += 1
                Snapshot.objects.create(host=host, dataset=ds, name=n, created_at=now - timedelta(minutes=made))
    return local_host


def names(page) -> list[str]:
    return [f"{s.dataset.name}@{s.name}" for s in page.object_list]


@pytest.mark.parametrize("q", ["s3", "bs3", "tank/a@s3", "t3", "S3", "zz"])
def test_a_broad_prefix_walked_in_order_finds_what_the_sorted_range_finds(snapshots, monkeypatch, q):
    narrow = selectors.snapshot_page(host=snapshots, page=1, q=q)
    expected, count = names(narrow), narrow.paginator.count
    monkeypatch.setattr(selectors, "BROAD_PREFIX", 0)  # every prefix taken for a broad one
    broad = selectors.snapshot_page(host=snapshots, page=1, q=q)
    assert names(broad) == expected and broad.paginator.count == count


def test_what_each_filter_finds(snapshots):
    def found(q):
        return sorted(names(selectors.snapshot_page(host=snapshots, page=1, q=q)))

    # a snapshot name's start (its case kept: S3x is not s3's), or any dataset whose name holds it (tank/bs3's all)
    assert found("s3") == sorted(
        ["tank/a@s3", "tank/a@s30", "tank/b@s3", "tank/b@s30"]
        + [f"tank/bs3@{n}" for n in ("s1", "s3", "s30", "S3x", "t3")]
    )
    assert found("tank/a@s3") == ["tank/a@s3", "tank/a@s30"]
    assert found("S3x") == ["tank/a@S3x", "tank/b@S3x", "tank/bs3@S3x"]  # a dataset's name is matched in any case
    assert all(s.host_id == snapshots.pk for s in selectors.snapshot_page(host=snapshots, page=1, q="s").object_list)


def test_the_api_counts_a_broad_prefix_by_its_index_and_agrees_with_the_page(snapshots, monkeypatch, viewer_client):
    monkeypatch.setattr(selectors, "BROAD_PREFIX", 0)
    answer = viewer_client.get("/api/v1/snapshots/?host=local&q=t3").json()
    assert answer["count"] == 3 and {r["name"] for r in answer["results"]} == {"t3"}


def test_a_broad_prefix_within_one_dataset_counts_that_datasets_snapshots(snapshots, monkeypatch):
    monkeypatch.setattr(selectors, "BROAD_PREFIX", 0)
    page = selectors.snapshot_page(host=snapshots, page=1, q="s3", dataset="tank/a")
    assert names(page) == ["tank/a@s3", "tank/a@s30"] and page.paginator.count == 2
