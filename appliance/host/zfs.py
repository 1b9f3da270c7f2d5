"""zfs: datasets, zvols and snapshots — listed once per pool for the inventory, changed through exact argv."""

import json
from collections.abc import Iterator
from dataclasses import dataclass

from appliance.host import names
from appliance.host.runner import Transport

# What the inventory keeps per dataset: one `zfs list` per pool reads all of it.
LIST_PROPERTIES = (
    "used", "available", "referenced", "compressratio", "mountpoint", "compression", "recordsize", "quota",
    "refquota", "reservation", "refreservation", "sync", "atime", "relatime", "volsize", "volblocksize",
    "primarycache", "secondarycache", "dedup", "xattr", "acltype", "casesensitivity", "snapdir", "creation",
)  # fmt: skip
SNAPSHOT_FIELDS = ("name", "used", "referenced", "creation")


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
    """`zfs list -H -p -t snapshot -o name,used,referenced,creation` → snapshots, streamed line by line."""
    for line in text.splitlines():
        name, used, referenced, creation = line.split("\t")
        dataset, _, snap = name.partition("@")
        yield SnapshotInfo(dataset, snap, int(used), int(referenced), int(creation))


def list_datasets(transport: Transport, pool: str) -> list[DatasetInfo]:
    argv = [
        "zfs",
        "list",
        "-j",
        "--json-int",
        "-r",
        "-t",
        "filesystem,volume",
        "-o",
        ",".join(LIST_PROPERTIES),
        "--",
        names.pool_name(pool),
    ]
    return parse_list(transport.run(argv, timeout=300).stdout)


def list_snapshots_text(transport: Transport, pool: str) -> str:
    argv = [
        "zfs",
        "list",
        "-H",
        "-p",
        "-t",
        "snapshot",
        "-o",
        ",".join(SNAPSHOT_FIELDS),
        "-r",
        "--",
        names.pool_name(pool),
    ]
    return transport.run(argv, timeout=1800).stdout


def create_argv(name: str, props: dict, *, volume_size: str | None = None) -> list[str]:
    names.dataset_name(name)
    if "/" not in name:
        raise names.InvalidName("A dataset lives inside a pool: pool/name")
    clean = names.properties(props)
    if volume_size is None and set(clean) & names.VOLUME_ONLY:
        raise names.PropertyErrors({k: "only for zvols" for k in set(clean) & names.VOLUME_ONLY})
    argv = ["zfs", "create"]
    if volume_size is not None:
        argv += ["-V", str(names.parse_size(volume_size))]
    for key, value in clean.items():
        argv += ["-o", f"{key}={value}"]
    return [*argv, "--", name]


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
