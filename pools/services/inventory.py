"""The storage inventory: mirror a host's pools, vdevs, disks, datasets and snapshots into the database.

Rows are updated in place on their natural key (host + name; a vdev by its place in the tree), new ones are
inserted and only what the read no longer shows is deleted, so ids and URLs stay valid across refreshes.
A full refresh reads everything (periodically); after an operation a Scope names what it touched and only
that is read: the pools' status, the dataset trees, single datasets with their own snapshots, the disks.
"""

import hashlib
import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime

from django.db import transaction
from django.db.models import Count, Q
from django.utils import timezone

from appliance.connect import transport_for
from appliance.models import Host, Operation
from appliance.operations import TargetBusy, Tracker, operation_runner, operation_start
from hostlib import disks as host_disks
from hostlib import zfs, zpool
from hostlib.errors import NotFound
from pools.models import Dataset, Disk, Pool, Snapshot, Vdev

BATCH = 5000
log = logging.getLogger(__name__)
DATASET_FIELDS = (
    "pool_id",
    "type",
    "depth",
    "used",
    "available",
    "referenced",
    "compressratio",
    "mountpoint",
    "properties",
)
SNAPSHOT_FIELDS = ("used", "referenced", "created_at", "createtxg", "holds")
DISK_FIELDS = ("path", "by_id", "size", "model", "serial", "media", "fstype", "mounted", "pool_id", "vdev_role")


def _field(column: str) -> str:
    return "pool" if column == "pool_id" else column


@dataclass
class Scope:
    """What an operation touched. pools: re-read status and usage; trees: datasets at and below, with all their
    snapshots; datasets: the dataset alone with its own snapshots; disks: the block devices."""

    pools: list[str] = field(default_factory=list)
    trees: list[str] = field(default_factory=list)
    datasets: list[str] = field(default_factory=list)
    disks: bool = False

    def as_params(self) -> dict:
        return asdict(self)

    @classmethod
    def of(cls, params: dict | None) -> "Scope | None":
        return cls(**params) if params else None


def _pool_of(name: str) -> str:
    return name.split("/")[0].split("@")[0]


def inventory_refresh(*, host: Host, operation: Operation | None = None, scope: Scope | None = None) -> None:
    """Read the host's storage (all of it, or only scope) and mirror it."""
    t = transport_for(host, operation=operation)
    full = scope is None
    pools = None if full else sorted(set(scope.pools) | {_pool_of(n) for n in scope.trees + scope.datasets})
    # The reads run side by side (the transport is thread-safe: one process or SSH channel per call); each
    # `zfs list` walks every dataset it covers, so two walks in a row cost ~1.5x one `zfs list -t all`, side by side ~1x.
    with ThreadPoolExecutor(max_workers=4) as reads:
        status_f, usage_f = reads.submit(zpool.status, t, pools), reads.submit(zpool.usage, t, pools)
        disks_f = reads.submit(host_disks.list_disks, t) if full or scope.disks else None
        statuses = status_f.result()
        if full:
            trees, singles = list(statuses), []
        else:
            trees = [n for n in scope.trees if _pool_of(n) in statuses]
            singles = [n for n in scope.datasets if _pool_of(n) in statuses]
        reads_f = {
            **{(n, None): (reads.submit(_listing, t, n, None)) for n in trees},
            **{(n, 0): (reads.submit(_listing, t, n, 0)) for n in singles},
        }
        usage, disks = usage_f.result(), disks_f.result() if disks_f else None
        listings = {key: f.result() for key, f in reads_f.items()}
    now = timezone.now()
    with transaction.atomic():
        gone = Pool.objects.filter(host=host)
        gone = gone if full else gone.filter(name__in=pools)
        gone.exclude(name__in=list(statuses)).delete()
        saved = {name: _save_pool(host, status, usage.get(name), now) for name, status in statuses.items()}
        for (name, depth), (listing, snapshot_text) in listings.items():
            _save_datasets(host, saved[_pool_of(name)], name, depth, listing, snapshot_text, now)
        if disks is not None:
            _save_disks(host, disks, now)


def _listing(t, name: str, depth: int | None) -> tuple[str, str]:
    """A tree (depth None) or one dataset (depth 0) with its snapshots, as zfs printed them (parsed as they are
    saved, a dataset at a time); nothing if the dataset is gone."""
    try:
        with ThreadPoolExecutor(max_workers=2) as both:
            datasets_f = both.submit(zfs.list_datasets_text, t, name, depth)
            snapshots_f = both.submit(zfs.list_snapshots_text, t, name, None if depth is None else 1)
            return datasets_f.result(), snapshots_f.result()
    except NotFound:
        return "", ""


# --- pools and vdevs ------------------------------------------------------------------------------------------
def _save_pool(host, status: zpool.PoolStatus, use: zpool.PoolUsage | None, now) -> Pool:
    scan = status.scan
    pool, _ = Pool.objects.update_or_create(
        host=host,
        name=status.name,
        defaults=dict(
            guid=status.guid,
            state=status.state,
            error_count=status.error_count,
            size=use.size if use else 0,
            allocated=use.allocated if use else 0,
            free=use.free if use else 0,
            fragmentation=use.fragmentation if use else 0,
            capacity=use.capacity if use else 0,
            scan_function=scan.function if scan else "",
            scan_state=scan.state if scan else "",
            scan_percent=scan.percent if scan else 0,
            scan_errors=scan.errors if scan else 0,
            scan_end=datetime.fromtimestamp(scan.end_time, UTC) if scan and scan.end_time else None,
            observed_at=now,
        ),
    )
    _save_vdevs(pool, status.vdevs)
    return pool


def _save_vdevs(pool: Pool, tree: list[zpool.Vdev]) -> None:
    """A vdev keeps its row while its place in the tree (role, parents' names, its name or path) stays the same."""
    existing = {}
    for row in pool.vdevs.order_by("position"):
        parent = existing.get(row.parent_id)
        existing[row.pk] = row
        row.key = (row.role, (parent.key[1] if parent else ()) + (row.name,))
    by_key = {row.key: row for row in existing.values()}
    kept, position = set(), 0

    def save(vdev: zpool.Vdev, parent: Vdev | None, path: tuple):
        nonlocal position
        position += 1
        key = (vdev.role, path + (vdev.name,))
        row = by_key.get(key) or Vdev(pool=pool)
        values = dict(
            parent=parent,
            position=position,
            depth=len(path),
            name=vdev.name,
            type=vdev.type,
            role=vdev.role,
            state=vdev.state,
            path=vdev.path,
            size=vdev.size,
            allocated=vdev.allocated,
            read_errors=vdev.read_errors,
            write_errors=vdev.write_errors,
            checksum_errors=vdev.checksum_errors,
        )
        if row.pk is None or any(getattr(row, k) != v for k, v in values.items()):
            for k, v in values.items():
                setattr(row, k, v)
            row.save()
        kept.add(row.pk)
        for child in vdev.children:
            save(child, row, key[1])

    for vdev in tree:
        save(vdev, None, ())
    pool.vdevs.exclude(pk__in=kept).delete()


# --- datasets and snapshots -----------------------------------------------------------------------------------
def _dataset_values(pool: Pool, info: zfs.DatasetInfo) -> dict:
    props = {k: {"value": p.value, "source": p.source, "from": p.inherited_from} for k, p in info.properties.items()}
    return dict(
        pool_id=pool.pk,
        type=info.type,
        depth=info.name.count("/"),
        used=info.number("used") or 0,
        available=info.number("available") or 0,
        referenced=info.number("referenced") or 0,
        compressratio=props.get("compressratio", {}).get("value", ""),
        mountpoint=props.get("mountpoint", {}).get("value", ""),
        properties=props,
    )


def _in_tree(name: str, depth: int | None) -> Q:
    return Q(name=name) if depth == 0 else Q(name=name) | Q(name__startswith=f"{name}/")


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


EMPTY = _digest("")  # a dataset without snapshots


def _save_datasets(host, pool: Pool, root: str, depth, listing: str, snapshot_text: str, now):
    """Mirror one listing (`zfs list -j` text): the tree at root (depth None) or root alone (depth 0), and their
    snapshots. A dataset whose entry reads as it did last time is not parsed nor written."""
    scope = Dataset.objects.filter(host=host).filter(_in_tree(root, depth))
    existing = {name: (pk, digest) for pk, name, digest in scope.values_list("pk", "name", "listing_digest")}
    changed, seen = [], set()

    def upsert():
        Dataset.objects.bulk_create(
            changed,
            batch_size=BATCH,
            update_conflicts=True,
            unique_fields=["host", "name"],
            update_fields=[_field(f) for f in DATASET_FIELDS] + ["observed_at", "listing_digest"],
        )
        changed.clear()

    for name, entry in zfs.iter_list(listing):
        seen.add(name)
        digest = _digest(entry)
        if existing.get(name, (0, ""))[1] == digest:
            continue
        values = _dataset_values(pool, zfs.dataset_info(name, entry))
        changed.append(Dataset(host=host, name=name, observed_at=now, listing_digest=digest, **values))
        if len(changed) >= BATCH:
            upsert()
    upsert()
    _delete(Dataset, [pk for name, (pk, _) in existing.items() if name not in seen])  # their snapshots go with them
    scope.update(observed_at=now)
    _save_snapshots(host, dict(scope.values_list("name", "id")), snapshot_text)


def _save_snapshots(host, dataset_ids: dict[str, int], text: str) -> None:
    """Snapshots of these datasets, a dataset's lines at a time: a dataset whose lines hash as they did last time is
    left alone (a quiet pool's refresh reads no snapshot row); the others are compared with their rows on (dataset,
    name) a batch at a time: the new and changed upserted, the ones not listed deleted."""
    digests = dict(Dataset.objects.filter(pk__in=dataset_ids.values()).values_list("pk", "snapshot_digest"))
    batch, lines = {}, 0  # dataset id -> (its lines, their digest)
    for dataset, group in zfs.snapshot_groups(text):
        dataset_id = dataset_ids.get(dataset)
        if dataset_id is None:
            continue
        digest = _digest(group)
        if digests.pop(dataset_id, None) == digest:
            continue
        batch[dataset_id] = (group, digest)
        lines += group.count("\n")
        if lines >= BATCH:
            _save_snapshot_batch(host, batch)
            batch, lines = {}, 0
    for dataset_id, digest in digests.items():  # listed none: their snapshots are gone
        if digest != EMPTY:
            batch[dataset_id] = ("", EMPTY)
    _save_snapshot_batch(host, batch)


def _save_snapshot_batch(host, batch: dict[int, tuple[str, str]]) -> None:
    if not batch:
        return
    existing = {}
    for pk, dataset_id, name, *values in Snapshot.objects.filter(dataset_id__in=list(batch)).values_list(
        "pk", "dataset_id", "name", *SNAPSHOT_FIELDS
    ):
        existing[(dataset_id, name)] = (pk, tuple(values))
    changed, seen = [], set()

    def upsert():  # a batch at a time: one dataset's 100,000 new snapshots never stand in memory as rows at once
        Snapshot.objects.bulk_create(
            changed, update_conflicts=True, unique_fields=["dataset", "name"], update_fields=list(SNAPSHOT_FIELDS)
        )
        changed.clear()

    for dataset_id, (group, _) in batch.items():
        for snap in zfs.parse_snapshots(group):
            key = (dataset_id, snap.name)
            seen.add(key)
            created = datetime.fromtimestamp(snap.creation, UTC)
            old = existing.get(key)
            if old is None or old[1] != (snap.used, snap.referenced, created, snap.createtxg, snap.holds):
                changed.append(
                    Snapshot(
                        host=host,
                        dataset_id=dataset_id,
                        name=snap.name,
                        used=snap.used,
                        referenced=snap.referenced,
                        created_at=created,
                        createtxg=snap.createtxg,
                        holds=snap.holds,
                    )
                )
                if len(changed) >= BATCH:
                    upsert()
    upsert()
    _delete(Snapshot, [pk for key, (pk, _) in existing.items() if key not in seen])
    counts = dict(
        Snapshot.objects.filter(dataset_id__in=list(batch)).values_list("dataset_id").annotate(n=Count("id")).order_by()
    )
    for dataset_id, (_, digest) in batch.items():
        Dataset.objects.filter(pk=dataset_id).update(snapshot_count=counts.get(dataset_id, 0), snapshot_digest=digest)


def _delete(model, pks: list[int]) -> None:
    for i in range(0, len(pks), 900):  # SQLite's bound on query parameters
        model.objects.filter(pk__in=pks[i : i + 900]).delete()


def dataset_renamed(*, host, old: str, new: str) -> None:
    """zfs rename moved a tree: the rows follow (ids kept), before the refresh reads the new names."""
    with transaction.atomic():
        for row in Dataset.objects.filter(host=host).filter(_in_tree(old, None)).order_by("-depth"):
            row.name = new + row.name[len(old) :]
            row.depth = row.name.count("/")
            row.save(update_fields=["name", "depth"])


# --- disks ------------------------------------------------------------------------------------------------------
def _save_disks(host, infos: list[host_disks.DiskInfo], now) -> None:
    members = {}  # device path or by-id link → (pool id, role)
    for pool_id, path, role in Vdev.objects.filter(pool__host=host, type="disk").values_list("pool_id", "path", "role"):
        members[host_disks.whole_disk(path)] = (pool_id, role)
    existing = {name: values for name, *values in Disk.objects.filter(host=host).values_list("name", *DISK_FIELDS)}
    changed = []
    for info in infos:
        pool_id, role = members.get(info.by_id) or members.get(info.path) or (None, "")
        values = dict(
            path=info.path,
            by_id=info.by_id,
            size=info.size,
            model=info.model,
            serial=info.serial,
            media=info.media,
            fstype=info.fstype,
            mounted=info.mounted,
            pool_id=pool_id,
            vdev_role=role,
        )
        if tuple(values.values()) != tuple(existing.get(info.name, ())):
            changed.append(Disk(host=host, name=info.name, observed_at=now, **values))
    Disk.objects.filter(host=host).exclude(name__in=[i.name for i in infos]).delete()
    Disk.objects.bulk_create(
        changed,
        update_conflicts=True,
        unique_fields=["host", "name"],
        update_fields=[_field(f) for f in DISK_FIELDS] + ["observed_at"],
    )
    Disk.objects.filter(host=host).update(observed_at=now)


# --- as operations ----------------------------------------------------------------------------------------------
def inventory_first_read(*, host: Host, operation: Operation | None = None) -> None:
    """A host just probed: its storage read at once (a host without OpenZFS has none to read)."""
    if host.has_zfs:
        inventory_refresh(host=host, operation=operation)


def inventory_refresh_start(*, host: Host, user) -> Operation:
    return operation_start(kind="pools.refresh", host=host, user=user)


@operation_runner("pools.refresh", lock="inventory", reads=True)
def inventory_refresh_run(tracker: Tracker) -> None:
    tracker.progress(10, "Reading pools, disks, datasets and snapshots")
    inventory_refresh(host=tracker.op.host, operation=tracker.op)
    tracker.progress(100, "Inventory refreshed")


def inventory_refresh_schedule() -> int:
    """Beat: queue a full read of every host that has ZFS, each on its own queue (skipped while one runs)."""
    started = 0
    for host in Host.objects.all():
        if not host.has_zfs:
            continue
        try:
            inventory_refresh_start(host=host, user=None)
            started += 1
        except TargetBusy as exc:  # a refresh is already queued or running for that host
            log.info("inventory refresh of %s not queued: %s", host.name, exc)
    return started
