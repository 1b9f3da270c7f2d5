"""Disks: lsblk plus by-id links, captured from the lab; free vs in use."""

from pathlib import Path

from hostlib import disks

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "host"


def parsed(lsblk: str):
    return {d.name: d for d in disks.parse((FIXTURES / lsblk).read_text(), (FIXTURES / "by_id.txt").read_text())}


def test_blank_disks_have_stable_names_sizes_and_no_signature():
    found = parsed("lsblk_free.json")
    disk = found["vdb"]
    assert disk.by_id == "/dev/disk/by-id/virtio-zfsdisk1"
    assert disk.serial == "zfsdisk1" and disk.size == 4 * 1024**3
    assert disk.fstype == "" and not disk.mounted and disk.partitions == []


def test_pool_members_and_the_system_disk_are_recognised():
    found = parsed("lsblk.json")
    assert found["vdb"].fstype == "zfs_member" and found["vdb"].partitions == ["vdb1", "vdb9"]
    assert found["vda"].mounted and found["vda"].fstype == "ext4"
    assert "zd0" not in found  # a zvol is not a disk to build pools from


def test_the_readable_by_id_link_is_preferred():
    assert (
        disks._best_link(["/dev/disk/by-id/wwn-0x5000c500a", "/dev/disk/by-id/ata-ST4000_Z1"])
        == "/dev/disk/by-id/ata-ST4000_Z1"
    )
    assert disks._best_link([]) == ""


def test_by_id_links_resolve_to_their_devices_and_partitions_are_not_disks():
    links = disks.parse_by_id((FIXTURES / "by_id.txt").read_text())
    assert links["virtio-zfsdisk1"] == "/dev/vdb" and links["virtio-zfsdisk8"] == "/dev/vdi"
    assert links["virtio-zfsdisk1-part1"] == "/dev/vdb1"
    found = parsed("lsblk.json")
    assert {found[f"vd{c}"].by_id for c in "bcdefghi"} == {f"/dev/disk/by-id/virtio-zfsdisk{i}" for i in range(1, 9)}
