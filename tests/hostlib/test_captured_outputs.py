"""Output captured from the lab guest by `make fixtures` parses with Tarn's parsers (no invented output)."""

import json
from pathlib import Path

import pytest

from hostlib.facts import gather, parse_btime, parse_impl, parse_meminfo, parse_now, parse_zfs_version
from tests.support.runners import FakeHost

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "host"
MANIFEST = json.loads((FIXTURES / "MANIFEST.json").read_text())


def read(name: str) -> str:
    return (FIXTURES / name).read_text()


def test_every_capture_succeeded_and_records_its_command_and_openzfs_version():
    assert MANIFEST["openzfs"].startswith("2.3.")
    for name, entry in MANIFEST["files"].items():
        assert entry["exit"] == 0, name
        assert entry["argv"] and entry["openzfs"] == MANIFEST["openzfs"]
        assert (FIXTURES / name).stat().st_size > 0, name


@pytest.mark.parametrize("name", sorted(n for n in MANIFEST["files"] if n.endswith(".json")))
def test_json_outputs_parse(name):
    assert json.loads(read(name))


def test_zfs_version_parses():
    user, kmod = parse_zfs_version(read("zfs_version.txt"))
    assert user == MANIFEST["openzfs"] and kmod.startswith("2.3.")


def test_the_kernel_module_and_arc_read_in_one_cat_parse_with_and_without_the_zfs_module():
    release, module, arc = read("osrelease.txt"), read("zfs_module_version.txt"), read("arcstats.txt")
    now = parse_now(release + module + arc)
    assert now.kernel == release.strip() and now.kernel.startswith("6.1.")
    assert now.openzfs == read("zfs_version.txt").split()[1]  # as `zfs version` names the module
    assert now.arc["c_max"] > 0 and now.arc["size"] > 0
    gone = parse_now(release)  # no module loaded: cat finds neither of its files
    assert (gone.kernel, gone.openzfs, gone.arc) == (now.kernel, "", {})


def test_meminfo_parses_to_bytes():
    assert parse_meminfo(read("meminfo.txt")) > 512 * 1024 * 1024


def test_the_boot_time_and_memory_are_read_in_one_cat_of_meminfo_and_stat():
    """The lab guest's /proc/stat (sampler/CAPTURED.md) after its /proc/meminfo, as `cat` prints the two."""
    stat, meminfo = read("sampler/proc_stat.txt"), read("meminfo.txt")
    assert parse_btime(stat) == 1795511521 and parse_btime(meminfo + stat) == 1795511521
    assert parse_meminfo(meminfo + stat) == parse_meminfo(meminfo)
    assert parse_btime(meminfo) == 0  # not known: nothing is judged by it
    fake = FakeHost()
    fake.files["/proc/stat"] = stat
    facts = gather(fake.transport())
    assert (facts.btime, facts.memory_bytes) == (1795511521, parse_meminfo(meminfo))
    assert [a for a in fake.argvs if a[0] == "cat"] == [["cat", "--", "/proc/meminfo", "/proc/stat"]]


def test_zpool_status_json_has_the_captured_topology():
    pool = json.loads(read("zpool_status.json"))["pools"]["tank"]
    root = pool["vdevs"]["tank"]
    classes = sorted((v["vdev_type"], v["class"]) for v in root["vdevs"].values())
    assert ("mirror", "normal") in classes
    disk = next(iter(next(iter(root["vdevs"].values()))["vdevs"].values()))
    assert disk["path"].startswith("/dev/disk/by-id/virtio-zfsdisk")
    assert isinstance(root["total_space"], int)  # --json-int gives numbers, not "2.75G"


def test_zfs_list_json_and_hp_agree():
    datasets = json.loads(read("zfs_list.json"))["datasets"]
    rows = [line.split("\t") for line in read("zfs_list_hp.txt").splitlines()]
    assert {row[0] for row in rows} == set(datasets)
    for name, kind, used, *_ in rows:
        assert datasets[name]["type"] == kind.upper() or datasets[name]["type"].lower() == kind
        assert int(used) == datasets[name]["properties"]["used"]["value"]
    assert datasets["tank/data@first"]["type"] == "SNAPSHOT"
    assert datasets["tank/vol"]["type"] == "VOLUME"


def test_the_icp_implementation_in_use_is_the_chosen_one_or_the_best_listed_for_fastest():
    """The lab's own lines (grep -H of the zfs module's icp_aes_impl and icp_gcm_impl): "fastest" chosen, so the
    best one listed is in use."""
    lines = dict(line.split(":", 1) for line in read("icp_impl.txt").splitlines())
    aes, gcm = lines["/sys/module/zfs/parameters/icp_aes_impl"], lines["/sys/module/zfs/parameters/icp_gcm_impl"]
    assert "[fastest]" in aes and "[fastest]" in gcm
    assert parse_impl(aes, "aes") == "aesni" and parse_impl(gcm, "gcm") == "avx"
    assert parse_impl(aes.replace("[fastest]", "fastest").replace("generic", "[generic]"), "aes") == "generic"
    assert parse_impl("", "aes") == ""
