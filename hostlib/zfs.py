"""zfs: datasets, zvols and snapshots — listed once per pool for the inventory, changed through exact argv."""

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass

from hostlib import names
from hostlib.runner import Transport

# What the inventory keeps per dataset: one `zfs list` per pool reads all of it.
LIST_PROPERTIES = (
    "used",
    "available",
    "referenced",
    "compressratio",
    "mountpoint",
    "compression",
    "recordsize",
    "quota",
    "refquota",
    "reservation",
    "refreservation",
    "sync",
    "atime",
    "relatime",
    "volsize",
    "volblocksize",
    "primarycache",
    "secondarycache",
    "dedup",
    "xattr",
    "acltype",
    "casesensitivity",
    "snapdir",
    "creation",
    "encryption",  # off, or the cipher (aes-256-gcm …)
    "encryptionroot",  # the dataset whose key unlocks this one
    "keystatus",  # available / unavailable (locked)
    "keyformat",
    "keylocation",
)
ENCRYPTION_PROPERTIES = ("encryption", "encryptionroot", "keystatus", "keyformat", "keylocation")
SNAPSHOT_FIELDS = ("name", "used", "referenced", "creation", "userrefs")  # userrefs: how many holds


@dataclass
class Property:
    value: str
    source: str  # local, inherited, default, received, temporary, none
    inherited_from: str = ""


@dataclass
class DatasetInfo:
    name: str
    type: str  # filesystem, volume
    pool: str
    properties: dict[str, Property]

    def number(self, key: str) -> int | None:
        prop = self.properties.get(key)
        try:
            return int(prop.value) if prop else None
        except ValueError:
            return None


@dataclass
class SnapshotInfo:
    dataset: str
    name: str  # after the @
    used: int
    referenced: int
    creation: int
    holds: int = 0


def parse_list(text: str) -> list[DatasetInfo]:
    """`zfs list -j --json-int -o …` → datasets and zvols with each property's value and source."""
    if not text.strip():
        return []
    result = []
    for name, raw in json.loads(text).get("datasets", {}).items():
        props = {}
        for key, prop in raw.get("properties", {}).items():
            source = prop.get("source", {})
            kind = str(source.get("type", "NONE")).lower()
            props[key] = Property(str(prop.get("value")), kind, source.get("data", "") if kind == "inherited" else "")
        result.append(
            DatasetInfo(name=name, type=raw["type"].lower(), pool=raw.get("pool", name.split("/")[0]), properties=props)
        )
    return result


def parse_snapshots(text: str) -> Iterator[SnapshotInfo]:
    """`zfs list -H -p -t snapshot -o name,used,referenced,creation[,userrefs]` → snapshots, streamed line by line."""
    for line in text.splitlines():
        name, used, referenced, creation, *holds = line.split("\t")
        dataset, _, snap = name.partition("@")
        yield SnapshotInfo(dataset, snap, int(used), int(referenced), int(creation), int(holds[0]) if holds else 0)


# A pool's listings grow with it (~5 KiB of JSON a dataset, ~80 bytes a snapshot line): room for ~25k datasets
# or ~1.6M snapshots in one pool, and still a bound on what a host can make Tarn hold.
LISTING_MAX_OUTPUT = 128 << 20


def _depth(depth: int | None) -> list[str]:
    """None: the whole tree below; 0: the dataset alone; 1: it and its children (or, for snapshots, its own)."""
    return ["-r"] if depth is None else ["-d", str(int(depth))]


def list_datasets_argv(name: str, depth: int | None = None) -> list[str]:
    """Filesystems and zvols at and below a pool or dataset, with every property the inventory keeps."""
    props = ",".join(LIST_PROPERTIES)
    return [
        "zfs",
        "list",
        "-j",
        "--json-int",
        *_depth(depth),
        "-t",
        "filesystem,volume",
        "-o",
        props,
        "--",
        names.dataset_name(name),
    ]


def list_snapshots_argv(name: str, depth: int | None = None) -> list[str]:
    """Snapshots of a pool's or dataset's tree (depth None) or of the dataset alone (depth 1)."""
    fields = ",".join(SNAPSHOT_FIELDS)
    return ["zfs", "list", "-H", "-p", "-t", "snapshot", "-o", fields, *_depth(depth), "--", names.dataset_name(name)]


def list_datasets(transport: Transport, name: str, depth: int | None = None) -> list[DatasetInfo]:
    return parse_list(
        transport.run(list_datasets_argv(name, depth), timeout=1800, max_output=LISTING_MAX_OUTPUT).stdout
    )


def list_snapshots_text(transport: Transport, name: str, depth: int | None = None) -> str:
    return transport.run(list_snapshots_argv(name, depth), timeout=3600, max_output=LISTING_MAX_OUTPUT).stdout


# Tarn's mark on a dataset it made for its own use (a benchmark's scratch dataset): clean-up destroys only a dataset
# carrying the mark of the run that made it, never one that was there before under the same name.
TAG_PROPERTY = "tarn:made-by"
TAG = re.compile(r"[a-z0-9][a-z0-9-]{0,63}")


def create_argv(name: str, props: dict, *, volume_size: str | None = None, tag: str = "") -> list[str]:
    names.dataset_name(name)
    if "/" not in name:
        raise names.InvalidName("A dataset lives inside a pool: pool/name")
    clean = names.properties(props)
    if volume_size is None and set(clean) & names.VOLUME_ONLY:
        raise names.PropertyErrors({k: "only for zvols" for k in set(clean) & names.VOLUME_ONLY})
    argv = ["zfs", "create"]
    if volume_size is not None:
        try:
            argv += ["-V", str(names.parse_size(volume_size))]
        except ValueError as exc:
            raise names.PropertyErrors({"volsize": str(exc)}) from None
    for key, value in clean.items():
        argv += ["-o", f"{key}={value}"]
    if tag:
        if not TAG.fullmatch(tag):
            raise ValueError(f"not a tag: {tag!r}")
        argv += ["-o", f"{TAG_PROPERTY}={tag}"]
    return [*argv, "--", name]


def tag(t: Transport, name: str) -> str:
    """The mark Tarn left on a dataset it made ('' where there is none, or no such dataset)."""
    argv = ["zfs", "get", "-H", "-o", "value", TAG_PROPERTY, "--", names.dataset_name(name)]
    value = t.run(argv, check=False).stdout.strip()
    return "" if value == "-" else value


def set_argv(name: str, props: dict) -> list[str]:
    names.dataset_name(name)
    clean = names.properties(props)
    fixed = set(clean) & names.CREATE_ONLY
    if fixed:
        raise names.PropertyErrors({k: "can only be chosen when the dataset is created" for k in fixed})
    return ["zfs", "set", *(f"{k}={v}" for k, v in clean.items()), "--", name]


def inherit_argv(name: str, key: str) -> list[str]:
    names.dataset_name(name)
    if key not in names.DATASET_PROPERTIES or key in names.CREATE_ONLY:
        raise names.PropertyErrors({key: "cannot be reset to inherited"})
    return ["zfs", "inherit", key, "--", name]


def snapshot_argv(names_: list[str], *, recursive: bool = False) -> list[str]:
    """One `zfs snapshot` takes many names, atomically, but at most one per dataset (OpenZFS refuses more)."""
    datasets = [names.snapshot_name(name).split("@")[0] for name in names_]
    if len(datasets) != len(set(datasets)):
        raise names.InvalidName("One call can snapshot each dataset once; split the names over several calls")
    return ["zfs", "snapshot", *(["-r"] if recursive else []), "--", *names_]


def destroy_argv(name: str, *, recursive: bool = False) -> list[str]:
    if "@" in name:
        names.snapshot_name(name)
    else:
        names.dataset_name(name)
        if "/" not in name:
            raise names.InvalidName("Destroying a pool's root dataset means destroying the pool")
    return ["zfs", "destroy", *(["-r"] if recursive else []), "--", name]


def rollback_argv(snapshot: str, *, destroy_newer: bool = False) -> list[str]:
    names.snapshot_name(snapshot)
    return ["zfs", "rollback", *(["-r"] if destroy_newer else []), "--", snapshot]


def rename_argv(name: str, new_name: str) -> list[str]:
    """Rename a dataset or zvol within its pool (parents are not created), or a snapshot within its dataset."""
    if "@" in name:
        names.snapshot_name(name)
        names.snapshot_name(new_name)
        if name.split("@")[0] != new_name.split("@")[0]:
            raise names.InvalidName("A snapshot is renamed within its dataset")
    else:
        names.dataset_name(name)
        names.dataset_name(new_name)
        if "/" not in name or "/" not in new_name:
            raise names.InvalidName("A pool's root dataset is renamed by importing the pool under a new name")
        if name.split("/")[0] != new_name.split("/")[0]:
            raise names.InvalidName("A dataset stays in its pool (use send/receive to move it)")
        if new_name.startswith(name + "/"):
            raise names.InvalidName("A dataset cannot move below itself")
    return ["zfs", "rename", "--", name, new_name]


def clone_argv(snapshot: str, target: str, props: dict | None = None, *, readonly: bool = False) -> list[str]:
    """A dataset that starts as the snapshot's contents, in the same pool: writable, or read-only (a restore to
    look at and copy from)."""
    names.snapshot_name(snapshot)
    names.dataset_name(target)
    if "/" not in target:
        raise names.InvalidName("A clone lives inside a pool: pool/name")
    if snapshot.split("/")[0].split("@")[0] != target.split("/")[0]:
        raise names.InvalidName("A clone lives in its snapshot's pool")
    argv = ["zfs", "clone", *(["-o", "readonly=on"] if readonly else [])]
    for key, value in names.properties(props or {}).items():
        argv += ["-o", f"{key}={value}"]
    return [*argv, "--", snapshot, target]


HOLD_TAG = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$")


def hold_argv(snapshot: str | list[str], tag: str, *, release: bool = False) -> list[str]:
    """Hold a snapshot, or several in one command (none can be destroyed while any hold is on it), or release one
    tag from them."""
    snapshots = [snapshot] if isinstance(snapshot, str) else list(snapshot)
    if not snapshots:
        raise names.InvalidName("Name at least one snapshot to hold")
    for one in snapshots:
        names.snapshot_name(one)
    if not HOLD_TAG.fullmatch(tag):
        raise names.InvalidName("A hold tag is up to 64 letters, digits, '_', '.', ':' or '-'")
    return ["zfs", "release" if release else "hold", "--", tag, *snapshots]


ARCSTATS = "/proc/spl/kstat/zfs/arcstats"


def parse_arcstats(text: str) -> dict[str, int]:
    """/proc/spl/kstat/zfs/arcstats: name type data lines (size, c_max, hits, misses…)."""
    stats = {}
    for line in text.splitlines()[2:]:
        parts = line.split()
        if len(parts) == 3 and parts[2].isdigit():
            stats[parts[0]] = int(parts[2])
    return stats


def arcstats(t: Transport) -> dict[str, int]:
    """The ARC's figures now ({} where the zfs module is not loaded)."""
    return parse_arcstats(t.run(["cat", "--", ARCSTATS], check=False).stdout)


def properties(t: Transport, name: str) -> dict[str, str]:
    """Every property of one dataset with its parsable value ({} where it is gone)."""
    text = t.run(
        ["zfs", "get", "-H", "-p", "-o", "property,value", "all", "--", names.dataset_name(name)], check=False
    ).stdout
    return dict(line.split("\t", 1) for line in text.splitlines() if "\t" in line)
