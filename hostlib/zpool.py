"""zpool: layouts checked and turned into exact argv; `zpool status/list -j --json-int` parsed."""

import json
import re
from dataclasses import dataclass, field

from hostlib import names
from hostlib.digits import is_digits
from hostlib.errors import error_for
from hostlib.runner import CommandResult, Transport

DATA_KINDS = {"stripe": 1, "mirror": 2, "raidz1": 2, "raidz2": 3, "raidz3": 4, "draid1": 3, "draid2": 4, "draid3": 5}
_DEVICE = re.compile(r"^/dev/(disk/by-id/[A-Za-z0-9._:+-]+|[a-z][a-z0-9]*)$")


class InvalidLayout(ValueError):
    """A layout zpool would refuse or that would lose data; the message says which vdev and why."""


def _check_device(path: str) -> str:
    """A whole disk or one of its partitions, by /dev/disk/by-id/… or /dev/sdX; never an option or a file."""
    if not _DEVICE.fullmatch(re.sub(r"-part[0-9]+\Z", "", path)):
        raise InvalidLayout(f"'{path}' is not a device path (/dev/disk/by-id/… or /dev/sdX)")
    return path


@dataclass(frozen=True)
class VdevSpec:
    kind: str  # stripe, mirror, raidz1-3, draid1-3
    disks: tuple[str, ...]


@dataclass(frozen=True)
class PoolLayout:
    data: tuple[VdevSpec, ...]
    log: tuple[VdevSpec, ...] = ()  # stripe or mirror
    special: tuple[VdevSpec, ...] = ()  # stripe or mirror
    cache: tuple[str, ...] = ()
    spare: tuple[str, ...] = ()

    def disks(self) -> list[str]:
        return [d for group in (self.data, self.log, self.special) for v in group for d in v.disks] + [
            *self.cache,
            *self.spare,
        ]


def check_layout(layout: PoolLayout, *, new_pool: bool = True) -> PoolLayout:
    """new_pool=False checks vdevs to add to an existing pool, which need no data vdev."""
    if new_pool and not layout.data:
        raise InvalidLayout("A pool needs at least one data vdev")
    if not layout.disks():
        raise InvalidLayout("Choose the disks")
    for role, group, kinds in (
        ("data", layout.data, DATA_KINDS),
        ("log", layout.log, ("stripe", "mirror")),
        ("special", layout.special, ("stripe", "mirror")),
    ):
        for i, vdev in enumerate(group, start=1):
            if vdev.kind not in kinds:
                raise InvalidLayout(f"{role} vdev {i}: '{vdev.kind}' is not one of {', '.join(kinds)}")
            need = DATA_KINDS[vdev.kind]
            if len(vdev.disks) < need or (vdev.kind == "stripe" and len(vdev.disks) != 1):
                raise InvalidLayout(
                    f"{role} vdev {i}: {vdev.kind} needs {'exactly' if vdev.kind == 'stripe' else 'at least'} "
                    f"{need} disk{'s' if need > 1 else ''}, got {len(vdev.disks)}"
                )
    seen = set()
    for disk in layout.disks():
        _check_device(disk)
        if disk in seen:
            raise InvalidLayout(f"{disk} appears twice")
        seen.add(disk)
    kinds = {v.kind.rstrip("123") for v in layout.data}
    if len(kinds) > 1:
        raise InvalidLayout("All data vdevs should have the same type (mixing them wastes space or redundancy)")
    return layout


def _vdev_args(vdev: VdevSpec) -> list[str]:
    if vdev.kind == "stripe":
        return list(vdev.disks)
    return [vdev.kind, *vdev.disks]


def create_argv(
    name: str, layout: PoolLayout, *, pool_props: dict, root_props: dict, force: bool = False, encryption=None
) -> list[str]:
    """The exact `zpool create` argv; names, properties and layout are checked first. encryption: a zfs.NewKey for
    an encrypted root dataset (its passphrase or key then goes on stdin, or sits in its key file)."""
    names.pool_name(name)
    check_layout(layout)
    argv = ["zpool", "create"]
    if force:
        argv.append("-f")
    for key, value in names.properties(pool_props, names.POOL_PROPERTIES).items():
        argv += ["-o", f"{key}={value}"]
    for key, value in names.properties(root_props).items():
        argv += ["-O", f"{key}={value}"]
    if encryption is not None:
        argv += encryption.options("-O")
    return [*argv, "--", name, *_layout_args(layout)]


def _layout_args(layout: PoolLayout) -> list[str]:
    argv = []
    for vdev in layout.data:
        argv += _vdev_args(vdev)
    for word, group in (("special", layout.special), ("log", layout.log)):
        if group:
            argv.append(word)
            for vdev in group:
                argv += _vdev_args(vdev)
    if layout.cache:
        argv += ["cache", *layout.cache]
    if layout.spare:
        argv += ["spare", *layout.spare]
    return argv


# --- reading ---------------------------------------------------------------------------------------
@dataclass
class Vdev:
    name: str
    type: str  # root, mirror, raidz, draid, disk, file, spare, replacing
    role: str  # data, special, log, cache, spare, dedup
    state: str
    path: str = ""
    size: int = 0
    allocated: int = 0
    read_errors: int = 0
    write_errors: int = 0
    checksum_errors: int = 0
    children: list["Vdev"] = field(default_factory=list)

    def disks(self):
        if self.type == "disk" or not self.children:
            yield self
        for child in self.children:
            yield from child.disks()


@dataclass
class Scan:
    function: str  # SCRUB, RESILVER
    state: str  # SCANNING, FINISHED, CANCELED
    examined: int
    to_examine: int
    errors: int
    start_time: int
    end_time: int
    paused: bool

    @property
    def percent(self) -> float:
        return (
            100.0 if self.state == "FINISHED" else (100.0 * self.examined / self.to_examine if self.to_examine else 0.0)
        )


@dataclass
class PoolStatus:
    name: str
    state: str
    guid: str
    error_count: int
    vdevs: list[Vdev]  # data, special, log, cache and spare vdevs (see role)
    scan: Scan | None


_ROLE = {"vdevs": "data", "special": "special", "logs": "log", "dedup": "dedup", "l2cache": "cache", "spares": "spare"}


def _int(value) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def _vdev_type(raw: dict) -> str:
    """OpenZFS 2.3 leaves vdev_type (and state) out for dRAID vdevs: 'draid1:2d:3c:0s-0' → draid."""
    if raw.get("vdev_type"):
        return raw["vdev_type"]
    if raw.get("vdevs"):
        match = re.match(r"[a-z]+", raw["name"])
        return match.group(0) if match else "group"
    return "disk"


def _vdev(raw: dict, role: str) -> Vdev:
    return Vdev(
        name=raw["name"].rsplit("/", 1)[-1],
        type=_vdev_type(raw),
        role=role,
        state=raw.get("state", ""),
        path=raw.get("path", ""),
        size=_int(raw.get("total_space") or raw.get("phys_space")),
        allocated=_int(raw.get("alloc_space")),
        read_errors=_int(raw.get("read_errors")),
        write_errors=_int(raw.get("write_errors")),
        checksum_errors=_int(raw.get("checksum_errors")),
        children=[_vdev(child, role) for child in raw.get("vdevs", {}).values()],
    )


def parse_status(text: str) -> dict[str, PoolStatus]:
    """`zpool status -j --json-int -P` → {pool name: PoolStatus}."""
    pools = {}
    for name, raw in json.loads(text).get("pools", {}).items():
        vdevs = []
        for key, role in _ROLE.items():
            group = raw.get(key, {})
            if key == "vdevs":  # the root vdev's children are the data vdevs
                group = next(iter(group.values()), {}).get("vdevs", {})
            vdevs += [_vdev(v, role) for v in group.values()]
        scan = raw.get("scan_stats")
        pools[name] = PoolStatus(
            name=name,
            state=raw.get("state", ""),
            guid=str(raw.get("pool_guid", "")),
            error_count=_int(raw.get("error_count")),
            vdevs=vdevs,
            scan=Scan(
                function=scan["function"],
                state=scan["state"],
                examined=_int(scan.get("examined")),
                to_examine=_int(scan.get("to_examine")),
                errors=_int(scan.get("errors")),
                start_time=_int(scan.get("start_time")),
                end_time=_int(scan.get("end_time")),
                paused=_int(scan.get("scrub_pause")) > 0,
            )
            if scan
            else None,
        )
    return pools


@dataclass
class PoolUsage:
    size: int
    allocated: int
    free: int
    fragmentation: int
    capacity: int
    health: str


def parse_list(text: str) -> dict[str, PoolUsage]:
    """`zpool list -j --json-int` → {pool: PoolUsage}. OpenZFS 2.3 prints nothing at all when there is no pool."""
    if not text.strip():
        return {}
    usage = {}
    for name, raw in json.loads(text).get("pools", {}).items():
        props = {key: value["value"] for key, value in raw["properties"].items()}
        usage[name] = PoolUsage(
            size=_int(props["size"]),
            allocated=_int(props["allocated"]),
            free=_int(props["free"]),
            fragmentation=_int(props.get("fragmentation")),
            capacity=_int(props.get("capacity")),
            health=str(props.get("health", "")),
        )
    return usage


def _pools(pools: list[str] | None) -> list[str]:
    return ["--", *(names.pool_name(p) for p in pools)] if pools else []


def _read(transport: Transport, argv: list[str]) -> str:
    """A read that may name pools that are gone (destroyed, exported): those are absent, any other failure raises."""
    result = transport.run(argv, timeout=60, check=False)
    if result.returncode != 0 and "no such pool" not in result.stderr:
        raise error_for(argv, result.returncode, result.stderr)
    return result.stdout if result.stdout.strip() else "{}"


def status(transport: Transport, pools: list[str] | None = None) -> dict[str, PoolStatus]:
    """Every pool's status, or only these pools' (a pool that is gone is simply absent)."""
    return parse_status(_read(transport, ["zpool", "status", "-j", "--json-int", "-P", *_pools(pools)]))


def usage(transport: Transport, pools: list[str] | None = None) -> dict[str, PoolUsage]:
    return parse_list(_read(transport, ["zpool", "list", "-j", "--json-int", *_pools(pools)]))


def block_cloning(transport: Transport, pool: str) -> bool:
    """Does the pool clone blocks (feature@block_cloning enabled or active)? A pool gone or a ZFS without the feature:
    no."""
    argv = ["zpool", "get", "-H", "-o", "value", "feature@block_cloning", "--", names.pool_name(pool)]
    return transport.run(argv, timeout=30, check=False).stdout.strip() in ("enabled", "active")


def destroy_argv(name: str) -> list[str]:
    return ["zpool", "destroy", "--", names.pool_name(name)]


def labelclear_argv(device: str) -> list[str]:
    """Wipe a former member's ZFS label (after its pool was destroyed), so the disk is free to reuse."""
    return ["zpool", "labelclear", "-f", "--", _check_device(device)]


def scrub_argv(pool: str, action: str) -> list[str]:
    """start, pause (resume with start) or stop a scrub."""
    flags = {"start": [], "pause": ["-p"], "stop": ["-s"]}
    if action not in flags:
        raise InvalidLayout(f"'{action}' is not start, pause or stop")
    return ["zpool", "scrub", *flags[action], "--", names.pool_name(pool)]


@dataclass
class ImportablePool:
    name: str
    guid: str
    state: str
    status: str  # why it may not import cleanly ('' when fine)
    action: str


def parse_import(text: str) -> list[ImportablePool]:
    """`zpool import` (no JSON in 2.3): blocks of 'key: value' lines starting at 'pool:'."""
    pools, current, key = [], None, None
    for line in text.splitlines():
        match = re.match(r"^\s*(pool|id|state|status|action|config):\s?(.*)$", line)
        if match:
            key, value = match.group(1), match.group(2).strip()
            if key == "pool":
                current = {"pool": value}
                pools.append(current)
            elif current is not None and key != "config":
                current[key] = value
        elif current is not None and key in ("status", "action") and line.strip():
            current[key] += " " + line.strip()  # a wrapped status or action line (config lines follow 'config:')
    return [
        ImportablePool(p["pool"], p.get("id", ""), p.get("state", ""), p.get("status", ""), p.get("action", ""))
        for p in pools
    ]


def import_argv(guid: str, new_name: str = "") -> list[str]:
    if not is_digits(guid):
        raise InvalidLayout("A pool to import is named by its numeric id")
    return ["zpool", "import", "--", guid, *([names.pool_name(new_name)] if new_name else [])]


def export_argv(name: str) -> list[str]:
    return ["zpool", "export", "--", names.pool_name(name)]


DEVICE_ACTIONS = ("offline", "online", "clear", "replace", "attach", "detach")


def device_argv(action: str, pool: str, device: str = "", new_device: str = "") -> list[str]:
    """offline, online, clear, replace, attach (to make or widen a mirror) or detach one device of a pool
    (device paths as in zpool status -P)."""
    names.pool_name(pool)
    for path in filter(None, (device, new_device)):
        _check_device(path)
    if action in ("replace", "attach"):
        if not device or not new_device:
            raise InvalidLayout("Choose the pool's disk and the new disk")
        return ["zpool", action, "--", pool, device, new_device]
    if action == "detach":
        if not device:
            raise InvalidLayout("Choose the disk to detach")
        return ["zpool", "detach", "--", pool, device]
    if action in ("offline", "online", "clear"):
        return ["zpool", action, "--", pool, *([device] if device else [])]
    raise InvalidLayout(f"'{action}' is not one of {', '.join(DEVICE_ACTIONS)}")


def trim_argv(pool: str, action: str) -> list[str]:
    """start, suspend (resume with start) or cancel a manual TRIM of every device that supports it."""
    flags = {"start": [], "suspend": ["-s"], "cancel": ["-c"]}
    if action not in flags:
        raise InvalidLayout(f"'{action}' is not start, suspend or cancel")
    return ["zpool", "trim", *flags[action], "--", names.pool_name(pool)]


def add_argv(pool: str, layout: PoolLayout, *, force: bool = False) -> list[str]:
    """`zpool add`: new data, log, special, cache or spare vdevs (data may be empty here, unlike create)."""
    names.pool_name(pool)
    check_layout(layout, new_pool=False)
    argv = ["zpool", "add", *(["-f"] if force else []), "--", pool]
    return argv + _layout_args(layout)


def topology_text(t: Transport, pool: str) -> str:
    """`zpool list -v -H -P` of one pool (its vdevs and devices with full paths), as text for a manifest."""
    return t.run(["zpool", "list", "-v", "-H", "-P", "--", names.pool_name(pool)], check=False).stdout


def import_scan(t: Transport) -> CommandResult:
    """`zpool import` with no pool named: the pools that could be imported (it exits 1 when there are none)."""
    return t.run(["zpool", "import"], timeout=300, check=False)
