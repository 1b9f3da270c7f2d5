"""Take one sample of a host's counters: the shipped sampler (hostlib/sampler.py) run as one command."""

import inspect
import json
from typing import NamedTuple

from hostlib import sampler
from hostlib.errors import CommandFailed
from hostlib.runner import Transport

SOURCE = inspect.getsource(sampler)


def sample(transport: Transport, *, timeout: float = 30.0) -> dict:
    """The sampler's JSON document, with the round trip it cost (ms) added as round_trip_ms."""
    result = transport.run(["python3", "-I", "-S", "-c", SOURCE], timeout=timeout)
    try:
        data = json.loads(result.stdout)
    except ValueError:
        raise CommandFailed(["sampler"], result.returncode, "the sampler printed no JSON document") from None
    data["round_trip_ms"] = round(result.duration * 1000, 1)
    return data


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
