"""zfs: exact argv for changes, parsers on captured lab output."""

import json
from pathlib import Path

import pytest

from hostlib import names, zfs

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "host"


def test_list_json_gives_values_and_where_they_come_from():
    datasets = {d.name: d for d in zfs.parse_list((FIXTURES / "zfs_get.json").read_text())}
    data = datasets["tank/data"]
    assert data.type == "filesystem" and data.pool == "tank"
    assert data.properties["recordsize"].value == "1048576" and data.properties["recordsize"].source == "local"
    compression = data.properties["compression"]
    assert (compression.value, compression.source, compression.inherited_from) == ("lz4", "inherited", "tank")
    assert data.number("used") > 0


def test_list_json_of_a_pool_has_filesystems_volumes_and_snapshots():
    datasets = {d.name: d for d in zfs.parse_list((FIXTURES / "zfs_list.json").read_text())}
    assert datasets["tank/vol"].type == "volume" and datasets["tank@first"].type == "snapshot"
    assert zfs.parse_list("") == []


def test_snapshots_stream_from_tab_separated_output():
    lines = [line for line in (FIXTURES / "zfs_list_hp.txt").read_text().splitlines() if "\tsnapshot\t" in line]
    text = "\n".join(f"{n}\t{u}\t{r}\t1795333245" for n, _, u, _, r, _ in (line.split("\t") for line in lines))
    snaps = list(zfs.parse_snapshots(text))
    assert [(s.dataset, s.name) for s in snaps] == [("tank", "first"), ("tank/data", "first"), ("tank/vol", "first")]
    assert all(s.creation == 1795333245 for s in snaps)


def test_change_argv_is_exact():
    assert zfs.create_argv("tank/data", {"compression": "zstd", "recordsize": "1M"}) == [
        "zfs",
        "create",
        "-o",
        "compression=zstd",
        "-o",
        "recordsize=1048576",
        "--",
        "tank/data",
    ]
    assert zfs.create_argv("tank/vol", {"volblocksize": "16K"}, volume_size="10G") == [
        "zfs",
        "create",
        "-V",
        "10737418240",
        "-o",
        "volblocksize=16384",
        "--",
        "tank/vol",
    ]
    assert zfs.set_argv("tank/data", {"quota": "none", "sync": "always"}) == [
        "zfs",
        "set",
        "quota=none",
        "sync=always",
        "--",
        "tank/data",
    ]
    assert zfs.inherit_argv("tank/data", "compression") == ["zfs", "inherit", "compression", "--", "tank/data"]
    assert zfs.snapshot_argv(["tank/a@s1", "tank/b@s1"]) == ["zfs", "snapshot", "--", "tank/a@s1", "tank/b@s1"]
    assert zfs.snapshot_argv(["tank@s1"], recursive=True) == ["zfs", "snapshot", "-r", "--", "tank@s1"]
    assert zfs.destroy_argv("tank/data@s1") == ["zfs", "destroy", "--", "tank/data@s1"]
    assert zfs.rollback_argv("tank/data@s1", destroy_newer=True) == ["zfs", "rollback", "-r", "--", "tank/data@s1"]
    assert zfs.rename_argv("tank/a", "tank/b/c") == ["zfs", "rename", "--", "tank/a", "tank/b/c"]
    assert zfs.rename_argv("tank/a@s1", "tank/a@s2") == ["zfs", "rename", "--", "tank/a@s1", "tank/a@s2"]
    assert zfs.clone_argv("tank/a@s1", "tank/restore", {}) == [
        "zfs",
        "clone",
        "--",
        "tank/a@s1",
        "tank/restore",
    ]
    assert zfs.clone_argv("tank/a@s1", "tank/restore", readonly=True)[:4] == ["zfs", "clone", "-o", "readonly=on"]
    assert zfs.hold_argv("tank/a@s1", "keep") == ["zfs", "hold", "--", "keep", "tank/a@s1"]
    assert zfs.hold_argv("tank/a@s1", "keep", release=True) == ["zfs", "release", "--", "keep", "tank/a@s1"]
    assert zfs.hold_argv(["tank/a@s1", "tank/a/b@s1"], "keep") == [
        "zfs",
        "hold",
        "--",
        "keep",
        "tank/a@s1",
        "tank/a/b@s1",
    ]


def test_snapshots_carry_their_hold_count_when_listed_with_userrefs():
    (snap,) = zfs.parse_snapshots("tank/a@s1\t0\t24576\t1795333245\t2")
    assert (snap.dataset, snap.name, snap.holds) == ("tank/a", "s1", 2)


@pytest.mark.parametrize(
    "call",
    [
        lambda: zfs.create_argv("tank", {}),
        lambda: zfs.create_argv("tank/-x", {}),
        lambda: zfs.create_argv("tank/data", {"volsize": "1G"}),
        lambda: zfs.create_argv("tank/data", {"mountpoint": "/etc"}),
        lambda: zfs.set_argv("tank/data", {"casesensitivity": "mixed"}),
        lambda: zfs.inherit_argv("tank/data", "volblocksize"),
        lambda: zfs.destroy_argv("tank"),
        lambda: zfs.snapshot_argv(["tank/data"]),
        lambda: zfs.rollback_argv("tank/data@$(id)"),
        lambda: zfs.snapshot_argv(["tank/data@a", "tank/data@b"]),
        lambda: zfs.rename_argv("tank/a", "other/a"),
        lambda: zfs.rename_argv("tank/a", "tank/a/b"),
        lambda: zfs.rename_argv("tank", "tank2"),
        lambda: zfs.rename_argv("tank/a@s1", "tank/b@s1"),
        lambda: zfs.rename_argv("tank/a", "tank/-a"),
        lambda: zfs.clone_argv("tank/a@s1", "other/restore"),
        lambda: zfs.clone_argv("tank/a", "tank/restore"),
        lambda: zfs.hold_argv("tank/a@s1", "-r"),
        lambda: zfs.hold_argv("tank/a@s1", "a b"),
        lambda: zfs.hold_argv([], "keep"),
        lambda: zfs.hold_argv(["tank/a@s1", "-r"], "keep"),
    ],
)
def test_it_refuses_bad_requests_before_any_argv(call):
    with pytest.raises((names.InvalidName, names.PropertyErrors)):
        call()


def test_the_inventory_list_command_reads_one_pool_in_one_call():
    class Recorder:
        def __init__(self):
            self.calls = []

        def run(self, argv, **kwargs):
            self.calls.append(argv)
            return type("R", (), {"stdout": json.dumps({"datasets": {}})})()

    t = Recorder()
    zfs.list_datasets(t, "tank")
    assert t.calls == [
        [
            "zfs",
            "list",
            "-j",
            "--json-int",
            "-r",
            "-t",
            "filesystem,volume",
            "-o",
            ",".join(zfs.LIST_PROPERTIES),
            "--",
            "tank",
        ]
    ]


@pytest.mark.parametrize("fixture", ["zfs_list.json", "zfs_get.json"])
def test_a_listing_read_a_dataset_at_a_time_is_what_the_whole_document_says(fixture):
    text = (FIXTURES / fixture).read_text()
    whole = json.loads(text)["datasets"]
    one_by_one = list(zfs.iter_list(text))
    assert [name for name, _ in one_by_one] == list(whole)
    assert all(json.loads(entry) == whole[name] for name, entry in one_by_one)
    assert zfs.parse_list(text) == [zfs.dataset_info(name, value) for name, value in whole.items()]


def test_names_with_json_escapes_are_read_as_json_reads_them():
    text = json.dumps(
        {"output_version": {"vers_major": 0}, "datasets": {'tank/a "b" \u00e9\\': {"type": "FILESYSTEM"}}}
    )
    assert [name for name, _ in zfs.iter_list(text)] == ['tank/a "b" \u00e9\\']


@pytest.mark.parametrize(
    "text",
    ['{"datasets": {"a": {}', "[1]", '{"datasets": {"a" {}}}', '{"datasets": {"a": {} "b": {}}}', '{"datasets": {a}}'],
)
def test_a_listing_that_is_not_json_is_refused(text):
    with pytest.raises(ValueError):
        list(zfs.iter_list(text))


def test_snapshot_lines_come_a_dataset_at_a_time():
    text = "tank/a@s1\t1\t2\t3\t0\t5\ntank/a@s2\t1\t2\t3\t0\t6\ntank/a/b@x\t1\t2\t3\t0\t7\ntank/ab@y\t1\t2\t3\t0\t8\n"
    assert list(zfs.snapshot_groups(text)) == [
        ("tank/a", "tank/a@s1\t1\t2\t3\t0\t5\ntank/a@s2\t1\t2\t3\t0\t6\n"),
        ("tank/a/b", "tank/a/b@x\t1\t2\t3\t0\t7\n"),
        ("tank/ab", "tank/ab@y\t1\t2\t3\t0\t8\n"),  # a name that starts like another is its own dataset
    ]
    assert list(zfs.snapshot_groups("")) == []


@pytest.mark.parametrize("text", ["tank/a@s1\t1\ntank/b@s1\t1\ntank/a@s2\t1\n", "tank/a@s1\t1\nno sign here\n"])
def test_snapshot_lines_of_a_dataset_in_two_places_or_without_a_name_are_refused(text):
    with pytest.raises(ValueError):
        list(zfs.snapshot_groups(text))
