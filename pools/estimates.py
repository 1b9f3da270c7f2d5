"""Rules of thumb shown before a pool is created: usable space, streaming MB/s and random IOPS.

Mirrors read from every disk and write at one disk's speed; RAID-Z streams at about its data disks' speed;
random IOPS scale with the number of vdevs, not disks. Per-disk figures by media type.
"""

from dataclasses import dataclass

from hostlib.digits import is_digits

PER_DISK = {  # media: (sequential MB/s, random IOPS)
    "hdd": (200, 150),
    "ssd": (500, 50_000),
    "nvme": (2_000, 200_000),
}


@dataclass
class Estimate:
    usable_bytes: int
    read_mbs: int
    write_mbs: int
    iops: int
    mixed_sizes: bool


def parity(kind: str) -> int:
    return int(kind[-1]) if is_digits(kind[-1]) and kind.startswith(("raidz", "draid")) else 0


def estimate(vdevs: list[tuple[str, list[tuple[int, str]]]], per_disk: dict | None = None) -> Estimate:
    """vdevs: [(kind, [(disk size, media), …]), …] for the data vdevs; per_disk: media → (MB/s, IOPS)."""
    per_disk = {**PER_DISK, **(per_disk or {})}
    usable = read = write = iops = 0
    sizes = set()
    for kind, disks in vdevs:
        if not disks:
            continue
        smallest = min(size for size, _ in disks)
        sizes.update(size for size, _ in disks)
        mbs, disk_iops = min((per_disk.get(media, per_disk["hdd"]) for _, media in disks), key=lambda x: x[0])
        n = len(disks)
        if kind == "mirror":
            usable += smallest
            read += n * mbs
            write += mbs
        else:
            data = n - parity(kind)
            usable += data * smallest
            read += data * mbs
            write += data * mbs
        iops += disk_iops
    return Estimate(usable, read, write, iops, mixed_sizes=len(sizes) > 1)
