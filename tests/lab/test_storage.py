"""Storage against the lab's real OpenZFS: inventory, pool create with every vdev class, refusals, destroy."""

import time
from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone

from appliance.models import Operation
from appliance.operations import operation_execute
from hostlib import zfs, zpool
from hostlib.errors import HostError
from hostlib.zpool import PoolLayout, VdevSpec
from pools import selectors, services
from pools.models import Dataset, Disk, ImportablePool, Pool, Snapshot, SnapshotTask

pytestmark = pytest.mark.lab
D = "/dev/disk/by-id/virtio-zfsdisk{}".format


def run(op):
    """Run the operation here through the runner registry (the worker round trip is proven in integration)."""
    operation_execute(op.pk)
    op.refresh_from_db()
    assert op.status == "succeeded", op.message
    return op


def test_create_a_pool_with_every_vdev_class_then_destroy_it(
    guest, lab_host, admin_user, django_capture_on_commit_callbacks
):
    services.inventory_refresh(host=lab_host)
    free = {d.by_id for d in Disk.objects.filter(host=lab_host) if d.is_free}
    assert {D(i) for i in range(1, 9)} <= free
    assert not Pool.objects.filter(host=lab_host).exists()

    layout = PoolLayout(
        data=(VdevSpec("mirror", (D(1), D(2))),),
        special=(VdevSpec("mirror", (D(3), D(4))),),
        log=(VdevSpec("mirror", (D(5), D(6))),),
        cache=(D(7),),
        spare=(D(8),),
    )
    with django_capture_on_commit_callbacks(execute=False):
        op = services.pool_create_start(
            host=lab_host,
            user=admin_user,
            name="tank",
            layout=layout,
            pool_props={"ashift": "12", "autotrim": "on"},
            root_props={"compression": "lz4", "atime": "off", "xattr": "sa"},
        )
    run(op)

    pool = Pool.objects.get(host=lab_host, name="tank")
    assert pool.state == "ONLINE" and pool.size > 0
    top = [(v.role, v.type) for v in pool.vdevs.filter(depth=0)]
    assert top == [("data", "mirror"), ("special", "mirror"), ("log", "mirror"), ("cache", "disk"), ("spare", "disk")]
    in_pool = {d.by_id: d.vdev_role for d in Disk.objects.filter(host=lab_host, pool=pool)}
    assert in_pool == {
        D(1): "data",
        D(2): "data",
        D(3): "special",
        D(4): "special",
        D(5): "log",
        D(6): "log",
        D(7): "cache",
        D(8): "spare",
    }
    root = Dataset.objects.get(host=lab_host, name="tank")
    assert root.properties["compression"] == {"value": "lz4", "source": "local", "from": ""}
    assert root.properties["atime"]["value"] == "off"
    audit = Operation.objects.get(pk=op.pk)
    assert audit.params["argvs"][0][:2] == ["zpool", "create"]

    with pytest.raises(ValidationError) as caught:  # the inventory knows those disks are taken now
        services.pool_create_start(
            host=lab_host,
            user=admin_user,
            name="other",
            layout=PoolLayout(data=(VdevSpec("mirror", (D(1), D(2))),)),
            pool_props={},
            root_props={},
        )
    assert "Not free" in str(caught.value) and "in pool tank" in str(caught.value)
    with pytest.raises(ValidationError, match="Type the pool's name"):
        services.pool_destroy_start(host=lab_host, user=admin_user, name="tank", confirm="tan")

    with django_capture_on_commit_callbacks(execute=False):
        op = services.pool_destroy_start(host=lab_host, user=admin_user, name="tank", confirm="tank")
    run(op)
    assert not Pool.objects.filter(host=lab_host).exists()
    assert {d.by_id for d in Disk.objects.filter(host=lab_host) if d.is_free} >= {D(i) for i in range(1, 9)}


@pytest.mark.parametrize(
    ("kind", "disks"),
    [("stripe", 2), ("raidz1", 3), ("raidz2", 4), ("raidz3", 5), ("draid1", 3)],
)
def test_each_data_layout_creates_the_topology_asked_for(
    guest, lab_host, admin_user, kind, disks, django_capture_on_commit_callbacks
):
    services.inventory_refresh(host=lab_host)
    chosen = tuple(D(i) for i in range(1, disks + 1))
    data = tuple(VdevSpec("stripe", (d,)) for d in chosen) if kind == "stripe" else (VdevSpec(kind, chosen),)
    with django_capture_on_commit_callbacks(execute=False):
        op = services.pool_create_start(
            host=lab_host, user=admin_user, name="tank", layout=PoolLayout(data=data), pool_props={}, root_props={}
        )
    run(op)
    top = list(Pool.objects.get(host=lab_host, name="tank").vdevs.filter(depth=0).values_list("type", flat=True))
    expected = {
        "stripe": ["disk", "disk"],
        "raidz1": ["raidz"],
        "raidz2": ["raidz"],
        "raidz3": ["raidz"],
        "draid1": ["draid"],
    }[kind]
    assert top == expected


def test_the_inventory_counts_snapshots_per_dataset(guest, lab_host):
    t = guest.transport()
    t.run(["zpool", "create", "-f", "tank", D(1)], mutating=True, timeout=120)
    for d in range(5):
        t.run(["zfs", "create", f"tank/d{d}"], mutating=True)
    for round_ in range(5):  # one call per round: one snapshot of each dataset, atomically
        t.run(zfs.snapshot_argv([f"tank/d{d}@s{round_}" for d in range(5)]), mutating=True, timeout=120)
    t.close()
    services.inventory_refresh(host=lab_host)
    counts = dict(Dataset.objects.filter(host=lab_host).values_list("name", "snapshot_count"))
    assert counts == {"tank": 0, **{f"tank/d{d}": 5 for d in range(5)}}
    assert Snapshot.objects.filter(dataset__host=lab_host).count() == 25


def test_dataset_zvol_snapshot_and_scrub_life_cycle(guest, lab_host, admin_user, django_capture_on_commit_callbacks):
    t = guest.transport()
    t.run(["zpool", "create", "-f", "-O", "compression=lz4", "tank", "mirror", D(1), D(2)], mutating=True, timeout=120)
    services.inventory_refresh(host=lab_host)

    def do(start, **kwargs):
        with django_capture_on_commit_callbacks(execute=False):
            op = start(host=lab_host, user=admin_user, **kwargs)
        return run(op)

    do(services.dataset_create_start, name="tank/data", props={"compression": "zstd", "recordsize": "1M"})
    data = Dataset.objects.get(host=lab_host, name="tank/data")
    assert data.properties["compression"]["value"] == "zstd" and data.properties["compression"]["source"] == "local"
    assert data.properties["recordsize"]["value"] == "1048576"

    do(services.dataset_set_start, name="tank/data", props={"quota": "1G"})
    do(services.dataset_inherit_start, name="tank/data", key="compression")
    data = Dataset.objects.get(host=lab_host, name="tank/data")
    assert data.properties["quota"] == {"value": "1073741824", "source": "local", "from": ""}
    assert data.properties["compression"] == {"value": "lz4", "source": "inherited", "from": "tank"}

    do(services.dataset_create_start, name="tank/vol", props={"volblocksize": "16K"}, volume_size="64M")
    vol = Dataset.objects.get(host=lab_host, name="tank/vol")
    assert vol.type == "volume" and vol.properties["volsize"]["value"] == str(64 << 20)

    do(services.snapshot_create_start, dataset="tank/data", name="one")
    guest.sh("echo later > /tank/data/file && sync")
    # `two` is newer, but its creation must not say so: a snapshot takes the emulated guest over a second, so the two
    # cannot be made to share one deterministically; the guest's clock set back before `two` gives the same failure
    # (creation does not order them; a clock stepped by NTP at boot does it on a real NAS).
    guest.set_clock(Snapshot.objects.get(dataset__name="tank/data", name="one").created_at.timestamp() - 30)
    try:
        do(services.snapshot_create_start, dataset="tank/data", name="two")
    finally:
        guest.set_clock()
    one, two = (Snapshot.objects.get(dataset__name="tank/data", name=n) for n in ("one", "two"))
    assert two.created_at < one.created_at and two.createtxg > one.createtxg
    with pytest.raises(ValidationError, match="destroys 1 newer snapshot"):
        services.snapshot_rollback_start(host=lab_host, user=admin_user, snapshot="tank/data@one", destroy_newer=False)
    do(services.snapshot_rollback_start, snapshot="tank/data@one", destroy_newer=True, confirm="one")
    assert guest.sh("ls /tank/data").strip() == ""  # the file written after @one is gone
    assert list(Snapshot.objects.filter(dataset__name="tank/data").values_list("name", flat=True)) == ["one"]

    do(services.snapshot_destroy_start, snapshots=["tank/data@one"])
    assert Dataset.objects.get(host=lab_host, name="tank/data").snapshot_count == 0

    assert selectors.dataset_dependents(host=lab_host, name="tank/data") == {
        "children": [],
        "child_count": 0,
        "snapshots": 0,
    }
    with pytest.raises(ValidationError, match="Type the dataset's name"):
        services.dataset_destroy_start(host=lab_host, user=admin_user, name="tank/data", confirm="data")
    do(services.dataset_destroy_start, name="tank/data", confirm="tank/data")
    assert not Dataset.objects.filter(host=lab_host, name="tank/data").exists()

    do(services.pool_scrub_start, pool="tank", action="start")
    pool = Pool.objects.get(host=lab_host, name="tank")
    assert pool.scan_function == "SCRUB"
    t.close()


def test_a_periodic_task_takes_snapshots_and_prunes_to_its_retention(
    guest, lab_host, django_capture_on_commit_callbacks
):

    t = guest.transport()
    t.run(["zpool", "create", "-f", "tank", D(1)], mutating=True, timeout=120)
    t.run(["zfs", "create", "tank/data"], mutating=True)
    t.run(["zfs", "snapshot", "tank/data@manual"], mutating=True)
    t.close()
    services.inventory_refresh(host=lab_host)
    task = SnapshotTask.objects.create(host=lab_host, dataset="tank/data", every_minutes=1, prefix="auto", keep_count=2)
    start = timezone.now()
    for minute in range(3):  # three runs, one (simulated) minute apart
        task.refresh_from_db()
        with django_capture_on_commit_callbacks(execute=False):
            op = services.snapshot_task_start(task=task, now=start + timedelta(minutes=minute))
        run(op)
    kept = sorted(
        Snapshot.objects.filter(dataset__host=lab_host, dataset__name="tank/data").values_list("name", flat=True)
    )
    assert kept == [task.snapshot_name(start + timedelta(minutes=m)) for m in (1, 2)] + ["manual"]


def test_export_then_import_under_a_new_name(guest, lab_host, admin_user, django_capture_on_commit_callbacks):

    t = guest.transport()
    t.run(["zpool", "create", "-f", "tank", "mirror", D(1), D(2)], mutating=True, timeout=120)
    t.close()
    services.inventory_refresh(host=lab_host)

    def do(start, **kwargs):
        with django_capture_on_commit_callbacks(execute=False):
            op = start(host=lab_host, user=admin_user, **kwargs)
        return run(op)

    do(services.pool_export_start, name="tank")
    assert not Pool.objects.filter(host=lab_host).exists()
    do(services.pool_import_scan_start)
    found = ImportablePool.objects.get(host=lab_host)
    assert (found.name, found.state) == ("tank", "ONLINE")
    do(services.pool_import_start, guid=found.guid, new_name="archive")
    assert Pool.objects.get(host=lab_host).name == "archive"
    assert not ImportablePool.objects.filter(host=lab_host).exists()


def test_replace_a_disk_and_watch_the_resilver_finish(guest, lab_host, admin_user, django_capture_on_commit_callbacks):

    t = guest.transport()
    t.run(["zpool", "create", "-f", "tank", "mirror", D(1), D(2)], mutating=True, timeout=120)
    guest.sh("dd if=/dev/urandom of=/tank/blob bs=1M count=32 status=none && sync")
    t.close()
    services.inventory_refresh(host=lab_host)
    old = f"{D(2)}-part1"

    def do(**kwargs):
        with django_capture_on_commit_callbacks(execute=False):
            op = services.pool_device_start(host=lab_host, user=admin_user, pool="tank", **kwargs)
        return run(op)

    do(action="offline", device=old, confirm="tank")  # the mirror is left with no redundancy: the pool's name
    assert Pool.objects.get(host=lab_host).state == "DEGRADED"
    do(action="online", device=old)
    with pytest.raises(ValidationError, match="not a free disk"):
        services.pool_device_start(
            host=lab_host, user=admin_user, pool="tank", action="replace", device=old, new_device=D(1)
        )
    small = Disk.objects.filter(host=lab_host, size__lt=Disk.objects.get(host=lab_host, by_id=D(2)).size).first()
    with pytest.raises(ValidationError, match="is smaller than"):  # the lab's 2 GiB SATA disks, free but too small
        services.pool_device_start(
            host=lab_host, user=admin_user, pool="tank", action="replace", device=old, new_device=small.by_id
        )
    do(action="replace", device=old, new_device=D(3), confirm="virtio-zfsdisk2-part1")
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # the worker refreshes periodically; here we refresh by hand
        services.inventory_refresh(host=lab_host)
        pool = Pool.objects.get(host=lab_host)
        replacing = pool.vdevs.filter(type="replacing").exists()  # the old disk leaves a moment after the resilver
        if (
            pool.scan_function == "RESILVER"
            and pool.scan_state == "FINISHED"
            and pool.state == "ONLINE"
            and not replacing
        ):
            break
        time.sleep(2)
    assert (pool.scan_function, pool.scan_state, pool.state) == ("RESILVER", "FINISHED", "ONLINE")
    members = {d.by_id for d in Disk.objects.filter(host=lab_host, pool=pool)}
    assert members == {D(1), D(3)}
    do(action="clear")


def test_attach_detach_add_vdevs_and_trim(guest, lab_host, admin_user, django_capture_on_commit_callbacks):
    t = guest.transport()
    t.run(["zpool", "create", "-f", "tank", D(1)], mutating=True, timeout=120)
    t.close()
    services.inventory_refresh(host=lab_host)
    first = Pool.objects.get(host=lab_host).vdevs.get(type="disk").path

    def do(start, **kwargs):
        with django_capture_on_commit_callbacks(execute=False):
            op = start(host=lab_host, user=admin_user, pool="tank", **kwargs)
        return run(op)

    def topology():
        status = zpool.status(guest.transport())["tank"]
        return [(v.role, v.type, len(v.children)) for v in status.vdevs]

    # a single disk becomes a mirror (confirmed by the device's name, as the page asks)
    do(services.pool_device_start, action="attach", device=first, new_device=D(2), confirm=first.rsplit("/", 1)[1])
    assert topology() == [("data", "mirror", 2)]
    do(services.pool_add_start, layout=PoolLayout(data=(VdevSpec("mirror", (D(3), D(4))),)))
    do(services.pool_add_start, layout=PoolLayout(data=(), log=(VdevSpec("stripe", (D(5),)),), cache=(D(6),)))
    do(services.pool_add_start, layout=PoolLayout(data=(), spare=(D(7),)))
    assert topology() == [
        ("data", "mirror", 2),
        ("data", "mirror", 2),
        ("log", "disk", 0),
        ("cache", "disk", 0),
        ("spare", "disk", 0),
    ]
    with pytest.raises(ValidationError, match="Not free"):
        services.pool_add_start(host=lab_host, user=admin_user, pool="tank", layout=PoolLayout(data=(), cache=(D(3),)))
    second = Pool.objects.get(host=lab_host).vdevs.get(type="disk", path__startswith=D(2)).path
    do(services.pool_device_start, action="detach", device=second)
    assert topology()[0] == ("data", "disk", 0)
    assert Disk.objects.get(host=lab_host, by_id=D(2)).is_free

    do(services.pool_trim_start, action="start")
    out = guest.sh("zpool status -t tank")
    assert "trimmed" in out or "trimming" in out, out  # each device reports its TRIM state


def test_rename_clone_and_holds(guest, lab_host, admin_user, django_capture_on_commit_callbacks):
    t = guest.transport()
    t.run(["zpool", "create", "-f", "tank", D(1)], mutating=True, timeout=120)
    t.run(["zfs", "create", "tank/a"], mutating=True)
    t.close()
    guest.sh("echo hello > /tank/a/file && sync")
    services.inventory_refresh(host=lab_host)

    def do(start, **kwargs):
        with django_capture_on_commit_callbacks(execute=False):
            op = start(host=lab_host, user=admin_user, **kwargs)
        return run(op)

    do(services.dataset_rename_start, name="tank/a", new_name="tank/projects")
    assert guest.sh("cat /tank/projects/file").strip() == "hello"
    assert set(Dataset.objects.filter(host=lab_host).values_list("name", flat=True)) == {"tank", "tank/projects"}

    do(services.snapshot_create_start, dataset="tank/projects", name="s1")
    do(services.snapshot_clone_start, snapshot="tank/projects@s1", target="tank/restore")
    assert guest.sh("cat /tank/restore/file").strip() == "hello"
    assert guest.sh("zfs get -H -o value origin tank/restore").strip() == "tank/projects@s1"

    do(services.snapshot_create_start, dataset="tank/projects", name="s2")
    do(services.snapshot_hold_start, snapshot="tank/projects@s2", tag="keep")
    assert Snapshot.objects.get(dataset__name="tank/projects", name="s2").holds == 1
    with pytest.raises(ValidationError, match="is held"):  # Tarn says so before running anything …
        services.snapshot_destroy_start(host=lab_host, user=admin_user, snapshots=["tank/projects@s2"])
    with pytest.raises(HostError, match="being held"):  # … and zfs itself agrees
        guest.transport().run(zfs.destroy_argv("tank/projects@s2"), mutating=True)
    do(services.snapshot_hold_start, snapshot="tank/projects@s2", tag="keep", release=True)
    assert Snapshot.objects.get(dataset__name="tank/projects", name="s2").holds == 0
    do(services.snapshot_destroy_start, snapshots=["tank/projects@s2"])
    assert not Snapshot.objects.filter(dataset__name="tank/projects", name="s2").exists()
