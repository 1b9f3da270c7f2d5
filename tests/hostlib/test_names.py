"""Names and property values are checked before any argv exists; hostile strings never pass."""

import pytest

from hostlib import names, zfs, zpool

HOSTILE = ["-f", "--help", "a;b", "a b", "a|b", "$(id)", "`id`", "a\nb", "a'b", 'a"b', "a/../b", "", "a\\b"]


@pytest.mark.parametrize("good", ["tank", "Tank_2", "a.b:c-d", "z" * 255])
def test_valid_pool_names_pass(good):
    assert names.pool_name(good) == good


@pytest.mark.parametrize(
    ("bad", "why"),
    [
        ("mirror", "reserved"),
        ("raidz2x", "reserved"),
        ("draid", "reserved"),
        ("spare1", "reserved"),
        ("log", "reserved"),
        ("1tank", "start with a letter"),
        ("c0d0", "disk name"),
        ("-tank", "start with '-'"),
        ("ta nk", "only letters"),
        ("tank/a", "only letters"),
        ("z" * 256, "at most 255"),
    ],
)
def test_invalid_pool_names_say_why(bad, why):
    with pytest.raises(names.InvalidName, match=why):
        names.pool_name(bad)


@pytest.mark.parametrize("value", HOSTILE)
def test_hostile_strings_are_never_a_valid_name(value):
    for check in (names.pool_name, names.dataset_name, names.snapshot_name):
        with pytest.raises(names.InvalidName):
            check(value)
        with pytest.raises(names.InvalidName):
            check(f"tank/{value}" if check is not names.snapshot_name else f"tank@{value}")


def test_dataset_and_snapshot_names():
    assert names.dataset_name("tank/data/projects") == "tank/data/projects"
    assert names.snapshot_name("tank/data@auto-2026-11-22_07.00") == "tank/data@auto-2026-11-22_07.00"
    for bad in ["tank//data", "tank/data@s", "tank/.", "tank/..", "tank/-x", "tank/data#b"]:
        with pytest.raises(names.InvalidName):
            names.dataset_name(bad)
    for bad in ["tank/data", "tank/data@", "tank/data@a@b", "tank@-x"]:
        with pytest.raises(names.InvalidName):
            names.snapshot_name(bad)


def test_properties_are_normalised_and_all_problems_reported_at_once():
    assert names.properties({"compression": "lz4", "recordsize": "1M", "quota": "10G", "refquota": "none"}) == {
        "compression": "lz4",
        "recordsize": "1048576",
        "quota": "10737418240",
        "refquota": "none",
    }
    with pytest.raises(names.PropertyErrors) as caught:
        names.properties({"compression": "lz5", "recordsize": "1000", "mountpoint": "/etc", "sync": "sometimes"})
    assert set(caught.value.problems) == {"compression", "recordsize", "mountpoint", "sync"}
    assert "power of two" in caught.value.problems["recordsize"]
    assert caught.value.problems["mountpoint"] == "Tarn does not set this property"


def test_pool_properties():
    assert names.properties({"ashift": "12", "autotrim": "on"}, names.POOL_PROPERTIES) == {
        "ashift": "12",
        "autotrim": "on",
    }
    with pytest.raises(names.PropertyErrors):
        names.properties({"ashift": "8"}, names.POOL_PROPERTIES)


def test_a_trailing_newline_is_never_accepted():
    """`$` in a Python regex also matches before a final newline: every check uses fullmatch."""

    for call in (
        lambda: names.pool_name("tank\n"),
        lambda: names.dataset_name("tank/a\n"),
        lambda: zfs.hold_argv("tank/a@s1", "keep\n"),
        lambda: zpool.device_argv("offline", "tank", "/dev/sdb\n"),
    ):
        with pytest.raises((names.InvalidName, zpool.InvalidLayout)):
            call()
