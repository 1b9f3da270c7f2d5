"""Block devices: lsblk -J plus the /dev/disk/by-id links, and whether each disk is free."""

import json
import posixpath
import re
from dataclasses import dataclass

from hostlib.runner import Transport

LSBLK_COLUMNS = "NAME,PATH,SIZE,MODEL,SERIAL,ROTA,TYPE,TRAN,FSTYPE,MOUNTPOINT"
BY_ID = "/dev/disk/by-id"
# Each by-id link and where it points (relative, as udev makes them: ../../vdb), one per line.
BY_ID_ARGV = ["find", BY_ID, "-mindepth", "1", "-maxdepth", "1", "-type", "l", "-printf", "%f\t%l\n"]
# Prefer names that stay readable and stable: bus-model-serial style over wwn/eui/nvme-eui ones.
_PREFERENCE = ("virtio-", "ata-", "nvme-", "scsi-", "usb-", "wwn-", "nvme-eui", "eui.")


@dataclass
class DiskInfo:
    name: str  # vdb
    path: str  # /dev/vdb
    by_id: str  # /dev/disk/by-id/virtio-zfsdisk1 ('' when the disk has none)
    size: int
    model: str
    serial: str
    media: str  # hdd, ssd, nvme
    fstype: str  # a filesystem or signature on the disk or one of its partitions ('zfs_member', 'ext4', …)
    mounted: bool
    partitions: list[str]


def whole_disk(path: str) -> str:
    """The disk a vdev's partition is on: by-id …-part1 → …; /dev/sdb1 → /dev/sdb; /dev/nvme0n1p1 → /dev/nvme0n1."""
    if path.startswith("/dev/disk/"):
        return re.sub(r"-part\d+$", "", path)
    return re.sub(r"(?<=\d)p\d+$", "", path) if "nvme" in path else re.sub(r"(?<=[a-z])\d+$", "", path)


def _best_link(links: list[str]) -> str:
    def rank(link):
        base = link.rsplit("/", 1)[-1]
        return next((i for i, p in enumerate(_PREFERENCE) if base.startswith(p)), len(_PREFERENCE)), base

    return sorted(links, key=rank)[0] if links else ""


def parse_by_id(find_output: str) -> dict[str, str]:
    """`find /dev/disk/by-id … -printf '%f\\t%l\\n'` → {link name: device path}."""
    links = {}
    for line in find_output.splitlines():
        name, _, target = line.partition("\t")
        if name and target:
            links[name] = posixpath.normpath(posixpath.join(BY_ID, target))
    return links


def parse(lsblk_json: str, by_id: str) -> list[DiskInfo]:
    links: dict[str, list[str]] = {}
    for name, target in parse_by_id(by_id).items():
        if "-part" not in name:
            links.setdefault(target, []).append(f"/dev/disk/by-id/{name}")
    disks = []
    for dev in json.loads(lsblk_json).get("blockdevices", []):
        if dev.get("type") != "disk" or dev["name"].startswith(("zd", "loop", "ram", "sr")):
            continue  # zvols, loop devices and optical drives are not pool members to offer
        children = dev.get("children") or []
        fstypes = [c.get("fstype") for c in [dev, *children] if c.get("fstype")]
        tran = (dev.get("tran") or "").lower()
        media = "nvme" if tran == "nvme" or dev["name"].startswith("nvme") else ("hdd" if dev.get("rota") else "ssd")
        disks.append(
            DiskInfo(
                name=dev["name"],
                path=dev.get("path") or f"/dev/{dev['name']}",
                by_id=_best_link(links.get(dev.get("path") or f"/dev/{dev['name']}", [])),
                size=int(dev.get("size") or 0),
                model=(dev.get("model") or "").strip(),
                serial=(dev.get("serial") or "").strip(),
                media=media,
                fstype=fstypes[0] if fstypes else "",
                mounted=any(c.get("mountpoint") for c in [dev, *children]),
                partitions=[c["name"] for c in children],
            )
        )
    return disks


def list_disks(transport: Transport) -> list[DiskInfo]:
    lsblk = transport.run(["lsblk", "-J", "-b", "-o", LSBLK_COLUMNS], timeout=60).stdout
    by_id = transport.run(BY_ID_ARGV, timeout=60, check=False)  # no by-id folder (no disks with ids): no links
    return parse(lsblk, by_id.stdout if by_id.returncode == 0 else "")
