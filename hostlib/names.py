"""OpenZFS names and property values, validated before any argv is built.

Stricter than OpenZFS where that avoids trouble (no spaces, no leading dash); every error says why.
"""

import re

from hostlib.digits import is_digits

MAX_NAME = 255  # ZFS_MAX_DATASET_NAME_LEN - 1
MAX_DEPTH = 50  # zfs_max_dataset_nesting: OpenZFS refuses deeper datasets
_COMPONENT = re.compile(r"^[A-Za-z0-9_.:-]+$")
RESERVED_POOL_PREFIXES = ("mirror", "raidz", "draid", "spare")
RESERVED_POOL_NAMES = {"log", "cache", "special", "dedup", "logs", "spares"}


class InvalidName(ValueError):
    """A name OpenZFS (or Tarn) would refuse; the message says why."""


def _component(value: str, what: str) -> None:
    if not value:
        raise InvalidName(f"{what} is empty")
    if value.startswith("-"):
        raise InvalidName(f"{what} may not start with '-'")
    if value in (".", "..", ".zfs"):
        raise InvalidName(f"{what} may not be '.', '..' or '.zfs' (the snapshot directory)")
    if not _COMPONENT.fullmatch(value):
        raise InvalidName(f"{what} may contain only letters, digits and _ . : - (no spaces, '/', '@' or '#')")


def pool_name(value: str) -> str:
    _component(value, "A pool name")
    if not value[0].isalpha():
        raise InvalidName("A pool name must start with a letter")
    lowered = value.lower()
    if lowered in RESERVED_POOL_NAMES or lowered.startswith(RESERVED_POOL_PREFIXES):
        raise InvalidName(f"'{value}' is reserved by OpenZFS (mirror, raidz, draid, spare, log, …)")
    if re.match(r"^c[0-9]", value):
        raise InvalidName("A pool name may not look like a disk name (c0…)")
    if len(value) > MAX_NAME:
        raise InvalidName(f"A pool name is at most {MAX_NAME} characters")
    return value


def dataset_name(value: str) -> str:
    """pool/child/grandchild (also a zvol)."""
    if "@" in value or "#" in value:
        raise InvalidName("A dataset name may not contain '@' or '#' (those name snapshots and bookmarks)")
    if len(value) > MAX_NAME:
        raise InvalidName(f"A dataset name is at most {MAX_NAME} characters")
    pool, *children = value.split("/")
    if len(children) > MAX_DEPTH:
        raise InvalidName(f"A dataset is at most {MAX_DEPTH} levels below its pool")
    pool_name(pool)
    for child in children:
        _component(child, "Each part of a dataset name")
    return value


def snapshot_name(value: str) -> str:
    """dataset@snap."""
    dataset, at, snap = value.partition("@")
    if not at:
        raise InvalidName("A snapshot name is dataset@name")
    dataset_name(dataset)
    _component(snap, "A snapshot's name after '@'")
    if "@" in snap or len(value) > MAX_NAME:
        raise InvalidName("A snapshot name has one '@' and is at most 255 characters")
    return value


# --- properties ------------------------------------------------------------------------------------
# ASCII only: with re.I a Unicode pattern also takes the Kelvin sign for K (and \d takes any script's digits).
_SIZE = re.compile(r"^([0-9]+)([KMGTP]?)$", re.I | re.ASCII)
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40, "P": 1 << 50}


def parse_size(value: str | int) -> int:
    """'64M' or '67108864' → bytes."""
    match = _SIZE.match(str(value).strip())
    if not match:
        raise ValueError("a size in bytes or with K, M, G, T or P (e.g. 64M)")
    return int(match.group(1)) * _UNITS[match.group(2).upper()]


def _choice(*options):
    def check(value: str) -> str:
        if value not in options:
            raise ValueError("one of " + ", ".join(options))
        return value

    return check


def _size_or_none(value: str) -> str:
    return "none" if value == "none" else str(parse_size(value))


def _power_of_two(low: int, high: int):
    def check(value: str) -> str:
        size = parse_size(value)
        if size < low or size > high or size & (size - 1):
            raise ValueError(f"a power of two from {low} to {high} bytes (e.g. 128K)")
        return str(size)

    return check


COMPRESSION = (
    "on",
    "off",
    "lz4",
    "zle",
    "lzjb",
    "gzip",
    *(f"gzip-{i}" for i in range(1, 10)),
    "zstd",
    *(f"zstd-{i}" for i in range(1, 20)),
    "zstd-fast",
)
ONOFF = _choice("on", "off")

# Property → value check (returns the value in the form passed to zfs). Only these may be set.
DATASET_PROPERTIES = {
    "compression": _choice(*COMPRESSION),
    "recordsize": _power_of_two(512, 16 << 20),
    "atime": ONOFF,
    "relatime": ONOFF,
    "sync": _choice("standard", "always", "disabled"),
    "quota": _size_or_none,
    "refquota": _size_or_none,
    "reservation": _size_or_none,
    "refreservation": _size_or_none,
    "primarycache": _choice("all", "none", "metadata"),
    "secondarycache": _choice("all", "none", "metadata"),
    "dedup": _choice("off", "on", "verify", "sha256", "sha512", "skein", "blake3"),
    "xattr": _choice("on", "off", "sa", "dir"),
    "acltype": _choice("off", "nfsv4", "posix"),
    "casesensitivity": _choice("sensitive", "insensitive", "mixed"),
    "volsize": lambda v: str(parse_size(v)),
    "volblocksize": _power_of_two(512, 128 << 10),
    "snapdir": _choice("hidden", "visible"),
}
CREATE_ONLY = {"casesensitivity", "volblocksize"}
VOLUME_ONLY = {"volsize", "volblocksize"}


def _ashift(value: str) -> str:
    if not is_digits(value) or not 9 <= int(value) <= 16:
        raise ValueError("a whole number from 9 to 16 (12 = 4 KiB sectors)")
    return value


POOL_PROPERTIES = {"ashift": _ashift, "autotrim": ONOFF}


def properties(values: dict, table: dict = DATASET_PROPERTIES) -> dict[str, str]:
    """Check every key and value; all problems at once as {key: message}, raised as PropertyErrors."""
    clean, problems = {}, {}
    for key, value in values.items():
        check = table.get(key)
        if check is None:
            problems[key] = "Tarn does not set this property"
            continue
        try:
            clean[key] = check(str(value).strip())
        except ValueError as exc:
            problems[key] = f"must be {exc}"
    if problems:
        raise PropertyErrors(problems)
    return clean


class PropertyErrors(ValueError):
    def __init__(self, problems: dict[str, str]):
        self.problems = problems
        super().__init__("; ".join(f"{k}: {v}" for k, v in problems.items()))
