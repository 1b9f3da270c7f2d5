"""A host with a pool (a mirror of two SSDs) and a 40 GiB dataset, as the inventory would have it; the API helpers
the benchmark tests share."""

import pytest
from django.utils import timezone

from pools.models import Dataset, Disk, Pool, Vdev


@pytest.fixture
def tank(local_host):
    now = timezone.now()
    pool = Pool.objects.create(host=local_host, name="tank", guid="1", state="ONLINE", observed_at=now)
    Dataset.objects.create(
        host=local_host,
        pool=pool,
        name="tank/data",
        type="filesystem",
        mountpoint="/tank/data",
        available=40 << 30,
        observed_at=now,
    )
    mirror = Vdev.objects.create(pool=pool, position=0, name="mirror-0", type="mirror", role="data", state="ONLINE")
    for n in (1, 2):
        Vdev.objects.create(
            pool=pool,
            parent=mirror,
            position=n,
            depth=1,
            name=f"sd{n}",
            type="disk",
            role="data",
            state="ONLINE",
            path=f"/dev/sd{n}1",
            size=4 << 40,
        )
        Disk.objects.create(
            host=local_host, name=f"sd{n}", path=f"/dev/sd{n}", size=4 << 40, media="ssd", pool=pool, observed_at=now
        )
    return local_host


def api(client, path, data):
    return client.post(f"/api/v1/{path}", data, content_type="application/json")


def schedule_body(**kw):
    """A valid benchmark schedule for the API, with kw overriding its fields."""
    return {
        "host": "local",
        "name": "weekly",
        "profiles": ["seq-write-1"],
        "target": "tank/data",
        "size": "8g",
        "minute": "30",
        "hour": "2",
        "day_of_week": "1-5",
        **kw,
    }
