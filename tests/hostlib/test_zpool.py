"""zpool: exact argv from layouts, refusals that name the problem, parsers on captured lab output."""

from pathlib import Path

import pytest

from hostlib import names, zpool
from hostlib.zpool import InvalidLayout, PoolLayout, VdevSpec
from tests.support.runners import FakeHost

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "host"
D = "/dev/disk/by-id/virtio-zfsdisk{}".format


def test_create_argv_is_exact_for_a_pool_with_every_vdev_class():
    layout = PoolLayout(
        data=(VdevSpec("mirror", (D(1), D(2))), VdevSpec("mirror", (D(3), D(4)))),
        log=(VdevSpec("mirror", (D(5), D(6))),),
        special=(VdevSpec("mirror", (D(7), D(8))),),
        cache=(D(9),),
        spare=(D(10),),
    )
    argv = zpool.create_argv(
        "tank",
        layout,
        pool_props={"ashift": "12", "autotrim": "on"},
        root_props={"compression": "lz4", "atime": "off", "xattr": "sa"},
    )
    assert argv == [
        "zpool",
        "create",
        "-o",
        "ashift=12",
        "-o",
        "autotrim=on",
        "-O",
        "compression=lz4",
        "-O",
        "atime=off",
        "-O",
        "xattr=sa",
        "--",
        "tank",
        "mirror",
        D(1),
        D(2),
        "mirror",
        D(3),
        D(4),
        "special",
        "mirror",
        D(7),
        D(8),
        "log",
        "mirror",
        D(5),
        D(6),
        "cache",
        D(9),
        "spare",
        D(10),
    ]


def test_the_cross_os_pool_line_is_expressible():
    layout = PoolLayout(data=(VdevSpec("raidz2", (D(1), D(2), D(3), D(4))),))
    argv = zpool.create_argv(
        "tank",
        layout,
        pool_props={"ashift": "12"},
        root_props={
            "compression": "lz4",
            "atime": "off",
            "xattr": "sa",
            "casesensitivity": "insensitive",
            "sync": "standard",
        },
    )
    assert argv[-6:] == ["tank", "raidz2", D(1), D(2), D(3), D(4)]
    assert "casesensitivity=insensitive" in argv


def test_stripes_and_draid():
    assert zpool.create_argv(
        "t", PoolLayout(data=(VdevSpec("stripe", (D(1),)), VdevSpec("stripe", (D(2),)))), pool_props={}, root_props={}
    )[-3:] == ["t", D(1), D(2)]
    argv = zpool.create_argv(
        "t", PoolLayout(data=(VdevSpec("draid1", (D(1), D(2), D(3))),)), pool_props={}, root_props={}
    )
    assert argv[-5:] == ["t", "draid1", D(1), D(2), D(3)]


@pytest.mark.parametrize(
    ("layout", "message"),
    [
        (PoolLayout(data=()), "at least one data vdev"),
        (PoolLayout(data=(VdevSpec("raidz2", (D(1), D(2))),)), "raidz2 needs at least 3 disks, got 2"),
        (PoolLayout(data=(VdevSpec("mirror", (D(1),)),)), "mirror needs at least 2 disks"),
        (PoolLayout(data=(VdevSpec("stripe", (D(1), D(2))),)), "stripe needs exactly 1 disk"),
        (PoolLayout(data=(VdevSpec("mirror", (D(1), D(1))),)), "appears twice"),
        (PoolLayout(data=(VdevSpec("mirror", (D(1), D(2))),), spare=(D(2),)), "appears twice"),
        (PoolLayout(data=(VdevSpec("raid5", (D(1), D(2))),)), "'raid5' is not one of"),
        (PoolLayout(data=(VdevSpec("mirror", (D(1), D(2))),), log=(VdevSpec("raidz1", (D(3), D(4))),)), "log vdev 1"),
        (PoolLayout(data=(VdevSpec("mirror", (D(1), "/etc/passwd")),)), "not a device path"),
        (PoolLayout(data=(VdevSpec("mirror", (D(1), "-f")),)), "not a device path"),
        (PoolLayout(data=(VdevSpec("mirror", (D(1), D(2))), VdevSpec("raidz1", (D(3), D(4))))), "same type"),
    ],
)
def test_bad_layouts_are_refused_before_any_argv(layout, message):
    with pytest.raises(InvalidLayout, match=message):
        zpool.create_argv("tank", layout, pool_props={}, root_props={})


def test_bad_names_and_properties_are_refused_before_any_argv():
    layout = PoolLayout(data=(VdevSpec("mirror", (D(1), D(2))),))
    with pytest.raises(names.InvalidName):
        zpool.create_argv("mirror", layout, pool_props={}, root_props={})
    with pytest.raises(names.PropertyErrors):
        zpool.create_argv("tank", layout, pool_props={"ashift": "20"}, root_props={})


def test_status_parses_the_captured_pool_with_every_vdev_class():
    pool = zpool.parse_status((FIXTURES / "zpool_status.json").read_text())["tank"]
    assert pool.state == "ONLINE" and pool.error_count == 0
    roles = [(v.role, v.type) for v in pool.vdevs]
    assert roles == [("data", "mirror"), ("special", "mirror"), ("log", "mirror"), ("cache", "disk"), ("spare", "disk")]
    data = pool.vdevs[0]
    assert [d.name for d in data.disks()] == ["virtio-zfsdisk1-part1", "virtio-zfsdisk2-part1"]
    assert data.children[0].path == "/dev/disk/by-id/virtio-zfsdisk1-part1"
    assert data.size > 3 * 1024**3
    assert pool.scan.function == "SCRUB" and pool.scan.state == "FINISHED" and pool.scan.percent == 100.0
    assert pool.vdevs[4].state == "AVAIL"


def test_list_parses_usage_and_an_empty_output_means_no_pools():
    usage = zpool.parse_list((FIXTURES / "zpool_list.json").read_text())["tank"]
    assert usage.size > usage.free > 0 and usage.health == "ONLINE" and 0 <= usage.capacity <= 100
    assert zpool.parse_list("") == {}


def test_a_draid_vdev_without_a_type_in_the_json_is_still_a_draid():
    pool = zpool.parse_status((FIXTURES / "zpool_status_draid.json").read_text())["dpool"]
    assert [(v.role, v.type) for v in pool.vdevs] == [("data", "draid")]
    assert len(list(pool.vdevs[0].disks())) == 3


def test_importable_pools_parse_from_the_text_listing():
    [pool] = zpool.parse_import((FIXTURES / "zpool_import.txt").read_text())
    assert (pool.name, pool.state) == ("tank", "ONLINE") and pool.guid.isdigit()
    assert "can be imported" in pool.action
    assert zpool.parse_import("no pools available to import\n") == []
    assert zpool.import_argv(pool.guid, "tank2") == ["zpool", "import", "--", pool.guid, "tank2"]
    with pytest.raises(InvalidLayout):
        zpool.import_argv("tank")
    assert zpool.export_argv("tank") == ["zpool", "export", "--", "tank"]


def test_device_actions_are_exact_and_checked():
    assert zpool.device_argv("replace", "tank", D(2) + "-part1", D(3)) == [
        "zpool",
        "replace",
        "--",
        "tank",
        D(2) + "-part1",
        D(3),
    ]
    assert zpool.device_argv("offline", "tank", D(2)) == ["zpool", "offline", "--", "tank", D(2)]
    assert zpool.device_argv("clear", "tank") == ["zpool", "clear", "--", "tank"]
    for bad in [("replace", "tank", D(2), ""), ("detach-all", "tank", D(2), ""), ("online", "tank", "/etc/passwd", "")]:
        with pytest.raises(InvalidLayout):
            zpool.device_argv(*bad)


def test_attach_detach_trim_and_add_are_exact_and_checked():
    assert zpool.device_argv("attach", "tank", D(1), D(3)) == ["zpool", "attach", "--", "tank", D(1), D(3)]
    assert zpool.device_argv("detach", "tank", D(3)) == ["zpool", "detach", "--", "tank", D(3)]
    assert zpool.trim_argv("tank", "start") == ["zpool", "trim", "--", "tank"]
    assert zpool.trim_argv("tank", "cancel") == ["zpool", "trim", "-c", "--", "tank"]
    layout = PoolLayout(data=(VdevSpec("mirror", (D(3), D(4))),), log=(VdevSpec("stripe", (D(5),)),), spare=(D(6),))
    assert zpool.add_argv("tank", layout) == [
        "zpool",
        "add",
        "--",
        "tank",
        "mirror",
        D(3),
        D(4),
        "log",
        D(5),
        "spare",
        D(6),
    ]
    assert zpool.add_argv("tank", PoolLayout(data=(), cache=(D(7),))) == ["zpool", "add", "--", "tank", "cache", D(7)]
    for call in (
        lambda: zpool.device_argv("attach", "tank", D(1), ""),
        lambda: zpool.device_argv("detach", "tank"),
        lambda: zpool.trim_argv("tank", "-f"),
        lambda: zpool.add_argv("tank", PoolLayout(data=())),
        lambda: zpool.add_argv("tank", PoolLayout(data=(VdevSpec("raidz2", (D(1), D(2))),))),
        lambda: zpool.add_argv("tank", PoolLayout(data=(), cache=("-f",))),
    ):
        with pytest.raises(InvalidLayout):
            call()
    with pytest.raises(names.InvalidName):
        zpool.add_argv("-tank", PoolLayout(data=(), cache=(D(7),)))


@pytest.mark.parametrize(("said", "cloning"), [("active\n", True), ("enabled\n", True), ("disabled\n", False),
                                               ("-\n", False), ("", False)])  # fmt: skip
def test_a_pool_clones_blocks_only_with_its_feature_enabled_or_active(said, cloning):
    fake = FakeHost().answer("zpool", "get", "-H", "-o", "value", "feature@block_cloning", "--", "tank", stdout=said)
    assert zpool.block_cloning(fake.transport(), "tank") is cloning
