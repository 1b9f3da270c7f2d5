"""Pool health on the dashboard for every host, in a fixed number of queries."""

from datetime import timedelta

from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from appliance.models import Host
from pools.models import Dataset, Pool, Snapshot


def make_pool(host, name, capacity, state="ONLINE"):
    return Pool.objects.create(
        host=host, name=name, guid="1", state=state, capacity=capacity, observed_at=timezone.now()
    )


def test_every_hosts_pools_show_state_and_capacity(viewer_client, local_host):
    nas = Host.objects.create(
        name="nas1", transport="ssh", address="10.0.0.9", facts={"zfs_version": "2.3.2"}, observed_at=timezone.now()
    )
    make_pool(nas, "tank", 93, state="DEGRADED")
    make_pool(nas, "fast", 12)
    page = viewer_client.get("/").content.decode()
    assert "tank" in page and "DEGRADED" in page and "bar-alert" in page and "fast" in page


def test_the_dashboard_query_count_does_not_grow_with_hosts_and_pools(viewer_client, local_host):
    viewer_client.get("/")
    with CaptureQueriesContext(connection) as few:
        viewer_client.get("/")
    for i in range(5):
        host = Host.objects.create(
            name=f"nas{i}",
            transport="ssh",
            address="10.0.0.9",
            facts={"zfs_version": "2.3.2"},
            observed_at=timezone.now(),
        )
        for p in range(3):
            make_pool(host, f"p{p}", 50)
    with CaptureQueriesContext(connection) as many:
        viewer_client.get("/")
    assert len(many.captured_queries) == len(few.captured_queries)


def test_the_api_lists_pools_and_paginates_snapshots_newest_first(viewer_client, local_host):

    pool = make_pool(local_host, "tank", 10)
    data = Dataset.objects.create(
        host=local_host, pool=pool, name="tank/data", type="filesystem", observed_at=timezone.now()
    )
    now = timezone.now()
    Snapshot.objects.bulk_create(
        [Snapshot(dataset=data, name=f"s{i:03d}", created_at=now - timedelta(hours=i)) for i in range(120)]
    )
    pools = viewer_client.get("/api/v1/pools/", {"host": "local"}).json()
    assert [p["name"] for p in pools["results"]] == ["tank"]
    first = viewer_client.get("/api/v1/snapshots/", {"dataset": "tank/data"}).json()
    assert first["count"] == 120 and len(first["results"]) == 50
    assert first["results"][0]["name"] == "s000" and first["next"]
    assert viewer_client.get("/api/v1/snapshots/", {"q": "s11"}).json()["count"] == 10  # s110-s119
