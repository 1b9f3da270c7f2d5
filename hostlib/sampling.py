"""Take one sample of a host's counters: the shipped sampler (hostlib/sampler.py) run as one command."""

import json
import math
from typing import NamedTuple

from hostlib import sampler
from hostlib.errors import CommandFailed
from hostlib.runner import Transport, python, source_of

SOURCE = source_of(sampler)


# What one sample may carry: a NAS with 200,000 datasets must not make a 13 MB row every 10 s. Past a limit the
# busiest subjects are kept (by bytes moved since mount) and the rest summed into OTHERS.
LIMITS = {"datasets": 200, "vdevs": 512, "links": 64, "conns": 256, "smb": 256, "nfs4": 256, "nfs_exports": 256}
OTHERS = "(others)"
MAX_DOCUMENT = 8 << 20  # bytes of JSON read from the sampler


class BadSample(CommandFailed):
    """The sampler's document is not what the sampler prints: refused whole, nothing of it stored."""

    def __init__(self, reason: str):
        super().__init__(["sampler"], 1, f"the sample was refused: {reason}")


def sample(transport: Transport, *, timeout: float = 30.0) -> dict:
    """The sampler's JSON document, checked (shape, finite numbers) and bounded (LIMITS), with the round trip it cost
    (ms) added as round_trip_ms."""
    result = transport.run(python("-c", SOURCE), timeout=timeout, max_output=MAX_DOCUMENT)
    data = parse(result.stdout)
    data["round_trip_ms"] = round(result.duration * 1000, 1)
    return data


def parse(text: str) -> dict:
    """The sampler's output → its document, or BadSample naming the first thing wrong."""
    try:
        data = json.loads(text, parse_constant=_no_constant)
    except ValueError as exc:
        raise BadSample(f"not a JSON document ({str(exc)[:80]})") from None
    if not isinstance(data, dict):
        raise BadSample("not a JSON object")
    for key, check in SHAPE.items():
        if key in data and not check(data[key]):
            raise BadSample(f"{key} is not what the sampler prints")
    if not _number(data.get("t")):
        raise BadSample("t (the sample's time) is missing")
    if "cpu" not in data or not set(sampler.ARC_FIELDS) <= set(data.get("arc", {})):
        raise BadSample("the CPU or ARC counters are missing")
    bound(data)
    return {k: v for k, v in data.items() if k in SHAPE or k == "t"}


def bound(data: dict) -> None:
    """Keep each group within LIMITS (in place), saying so in data['errors']."""
    notes = []
    datasets = data.get("datasets") or {}
    if len(datasets) > LIMITS["datasets"]:
        data["datasets"] = _busiest(datasets, LIMITS["datasets"], lambda row: row[2] + row[3])
        notes.append(f"{len(datasets):,} datasets: the {LIMITS['datasets']} busiest kept, the rest as {OTHERS}")
    vdevs = data.get("vdevs") or {}
    if sum(len(v) for v in vdevs.values()) > LIMITS["vdevs"]:
        left = LIMITS["vdevs"]
        for pool in sorted(vdevs):
            vdevs[pool] = dict(sorted(vdevs[pool].items())[: max(left, 0)])
            left -= len(vdevs[pool])
        notes.append(f"more than {LIMITS['vdevs']} vdevs: the first {LIMITS['vdevs']} kept")
    links = data.get("links") or {}
    if len(links) > LIMITS["links"]:
        data["links"] = _busiest(links, LIMITS["links"], lambda row: row[0] + row[1])
        notes.append(f"{len(links):,} links: the {LIMITS['links']} busiest kept, the rest as {OTHERS}")
    for key in ("conns", "nfs4"):
        if len(data.get(key) or ()) > LIMITS[key]:
            notes.append(f"{len(data[key]):,} {key}: {LIMITS[key]} kept")
            data[key] = data[key][: LIMITS[key]]
    for key in ("smb", "nfs_exports"):
        if len(data.get(key) or {}) > LIMITS[key]:
            notes.append(f"{len(data[key]):,} {key}: {LIMITS[key]} kept")
            data[key] = dict(sorted(data[key].items())[: LIMITS[key]])
    if notes:
        data.setdefault("errors", {})["limits"] = "; ".join(notes)


def _busiest(rows: dict, keep: int, weight) -> dict:
    ranked = sorted(rows.items(), key=lambda item: (-weight(item[1]), item[0]))
    kept = dict(ranked[: keep - 1])
    kept[OTHERS] = [sum(column) for column in zip(*(row for _, row in ranked[keep - 1 :]), strict=True)]
    return kept


def _no_constant(name: str):
    raise ValueError(f"{name} is not a number")


def _count(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 1 << 64


def _number(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _counts(n: int):
    return lambda row: isinstance(row, list) and len(row) == n and all(_count(x) for x in row)


def _text(value, limit: int = 512) -> bool:
    return isinstance(value, str) and len(value) <= limit


def _map(check_value, limit: int = 1_000_000):
    return lambda value: (
        isinstance(value, dict) and len(value) <= limit and all(_text(k) and check_value(v) for k, v in value.items())
    )


def _vdev_row(row) -> bool:
    return isinstance(row, list) and len(row) == 6 and _text(row[0]) and _text(row[1]) and _counts(4)(row[2:])


def _conn_row(row) -> bool:
    return isinstance(row, list) and len(row) == 5 and _text(row[0]) and _text(row[1]) and _counts(3)(row[2:])


def _session(value) -> bool:
    return (
        isinstance(value, dict)
        and all(_text(value.get(k, "")) for k in ("user", "dialect"))
        and isinstance(value.get("shares", []), list)
        and all(_text(x) for x in value.get("shares", []))
    )


def _health(value) -> bool:
    return isinstance(value, list) and len(value) == 2 and _text(value[0]) and _map(_text)(value[1])


SHAPE = {
    "errors": _map(lambda v: _text(v, 2000), 100),
    "cpu": _counts(2),
    "cpus": _count,
    "arc": _map(_count, 100),
    "links": _map(_counts(6)),
    "nfsd": _counts(3),
    "datasets": _map(_counts(4)),
    "vdevs": _map(_map(_vdev_row)),
    "health": _map(_health),
    "waits": _map(_counts(2)),
    "conns": lambda v: isinstance(v, list) and all(_conn_row(r) for r in v),
    "smb": _map(_session),
    "nfs4": lambda v: isinstance(v, list) and all(_text(x) for x in v),
    "nfs_exports": _map(lambda v: isinstance(v, list) and all(_text(x, 4096) for x in v)),
    "cost_cpu_ms": _number,
    "cost_wall_ms": _number,
}


# The sampler's document keeps its rows as plain lists (compact JSON over the wire and in the database); these name
# their positions once, for every reader.
class VdevRow(NamedTuple):
    """One vdev's counters since import (`zpool get … all-vdevs`); parent is the pool for a top-level vdev."""

    parent: str
    vdev_class: str  # normal, special, dedup, log, cache, spare
    read_ops: int
    write_ops: int
    read_bytes: int
    write_bytes: int


class IoRow(NamedTuple):
    """A dataset's objset counters since mount."""

    read_ops: int
    write_ops: int
    read_bytes: int
    write_bytes: int


class LinkRow(NamedTuple):
    """A link's counters from /proc/net/dev (errors and drops summed over both directions)."""

    rx_bytes: int
    tx_bytes: int
    rx_packets: int
    tx_packets: int
    errors: int
    dropped: int


class ConnRow(NamedTuple):
    """An established SMB or NFS connection (`ss -t -i`): bytes the NAS sent (client reads) and received."""

    protocol: str  # smb or nfs
    client: str
    port: int
    sent: int
    received: int


class CpuRow(NamedTuple):
    busy: int  # jiffies but idle and iowait
    total: int


class NfsdRow(NamedTuple):
    operations: int  # v3 + v4 operations
    read_bytes: int
    written_bytes: int
