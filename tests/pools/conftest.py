"""Storage rows the pool tests share."""

import pytest
from django.utils import timezone

from pools.models import Dataset, Disk, Pool, Snapshot, Vdev
from tests.pools.test_pool_create_view import D, disks


@pytest.fixture
def tank(local_host):
    """A pool 'tank' on one mirror of disks 1 and 2, plus free disks 3-6, a dataset and a snapshot."""
    disks(local_host, n=6)
    pool = Pool.objects.create(host=local_host, name="tank", guid="1", state="ONLINE", observed_at=timezone.now())
    mirror = Vdev.objects.create(pool=pool, position=1, name="mirror-0", type="mirror", role="data", state="ONLINE")
    for i in (1, 2):
        Vdev.objects.create(
            pool=pool,
            parent=mirror,
            position=1 + i,
            depth=1,
            name=f"d{i}",
            type="disk",
            role="data",
            state="ONLINE",
            path=D(i),
        )

    Disk.objects.filter(by_id__in=[D(1), D(2)]).update(pool=pool, vdev_role="data")
    now = timezone.now()
    root = Dataset.objects.create(host=local_host, pool=pool, name="tank", type="filesystem", observed_at=now)
    data = Dataset.objects.create(
        host=local_host, pool=pool, name="tank/a", type="filesystem", depth=1, observed_at=now
    )
    Snapshot.objects.create(dataset=data, name="s1", created_at=now)
    return pool, root, data
