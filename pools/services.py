"""Writes for storage: refreshing the inventory, and pool, dataset and snapshot operations."""

import logging
import re
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from appliance.connect import transport_for
from appliance.host import disks as host_disks
from appliance.host import names, shares, zfs, zpool
from appliance.host.zpool import InvalidLayout, PoolLayout
from appliance.models import Host, Operation
from appliance.operations import operation_start, operation_tracking
from pools.models import Dataset, Disk, NfsExport, Pool, SambaUser, ShareSettings, SmbShare, Snapshot, Vdev

BATCH = 5000
log = logging.getLogger(__name__)


# --- inventory -------------------------------------------------------------------------------------
def inventory_refresh(*, host: Host, operation: Operation | None = None) -> None:
    """Read pools, vdevs, disks, datasets and snapshots from the host and mirror them (one call per pool)."""
    t = transport_for(host, operation=operation)
    # The reads run side by side (the transport is thread-safe: one process or SSH channel per call); each
    # `zfs list` walks every dataset, so two walks in a row cost ~1.5x a single `zfs list -t all`, side by side ~1x.
    with ThreadPoolExecutor(max_workers=4) as reads:
        status_f, usage_f, disks_f = (reads.submit(f, t) for f in (zpool.status, zpool.usage, host_disks.list_disks))
        statuses = status_f.result()
        datasets_f = {name: reads.submit(zfs.list_datasets, t, name) for name in statuses}
        snapshots_f = {name: reads.submit(zfs.list_snapshots_text, t, name) for name in statuses}
        usage, disks = usage_f.result(), disks_f.result()
        datasets = {name: f.result() for name, f in datasets_f.items()}
        snapshots = {name: f.result() for name, f in snapshots_f.items()}
    now = timezone.now()
    with transaction.atomic():
        Pool.objects.filter(host=host).exclude(name__in=list(statuses)).delete()
        pools = {name: _save_pool(host, status, usage.get(name), now) for name, status in statuses.items()}
        for name, pool in pools.items():
            _save_datasets(host, pool, datasets[name], snapshots[name], now)
        _save_disks(host, pools, disks, now)


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
    pool.vdevs.all().delete()
    position = 0

    def save(vdev: zpool.Vdev, parent: Vdev | None, depth: int):
        nonlocal position
        position += 1
        row = Vdev.objects.create(
            pool=pool,
            parent=parent,
            position=position,
            depth=depth,
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
        for child in vdev.children:
            save(child, row, depth + 1)

    for vdev in status.vdevs:
        save(vdev, None, 0)
    return pool


def _save_datasets(host, pool: Pool, infos: list[zfs.DatasetInfo], snapshot_text: str, now) -> None:
    pool.datasets.all().delete()  # snapshots go with them; both are rebuilt from this observation
    rows = []
    for info in infos:
        props = {
            k: {"value": p.value, "source": p.source, "from": p.inherited_from} for k, p in info.properties.items()
        }
        rows.append(
            Dataset(
                host=host,
                pool=pool,
                name=info.name,
                type=info.type,
                depth=info.name.count("/"),
                used=info.number("used") or 0,
                available=info.number("available") or 0,
                referenced=info.number("referenced") or 0,
                compressratio=props.get("compressratio", {}).get("value", ""),
                mountpoint=props.get("mountpoint", {}).get("value", ""),
                properties=props,
                observed_at=now,
            )
        )
    Dataset.objects.bulk_create(rows, batch_size=BATCH)
    ids = dict(Dataset.objects.filter(pool=pool).values_list("name", "id"))
    counts: dict[int, int] = {}
    batch = []
    for snap in zfs.parse_snapshots(snapshot_text):
        dataset_id = ids.get(snap.dataset)
        if dataset_id is None:
            continue
        counts[dataset_id] = counts.get(dataset_id, 0) + 1
        batch.append(
            Snapshot(
                host=host,
                dataset_id=dataset_id,
                name=snap.name,
                used=snap.used,
                referenced=snap.referenced,
                created_at=datetime.fromtimestamp(snap.creation, UTC),
                holds=snap.holds,
            )
        )
        if len(batch) >= BATCH:
            Snapshot.objects.bulk_create(batch)
            batch = []
    Snapshot.objects.bulk_create(batch)
    for dataset_id, count in counts.items():
        Dataset.objects.filter(pk=dataset_id).update(snapshot_count=count)


def _whole_disk(path: str) -> str:
    """The disk a vdev's partition is on: by-id …-part1 → …; /dev/sdb1 → /dev/sdb; /dev/nvme0n1p1 → /dev/nvme0n1."""
    if path.startswith("/dev/disk/"):
        return re.sub(r"-part\d+$", "", path)
    return re.sub(r"(?<=\d)p\d+$", "", path) if "nvme" in path else re.sub(r"(?<=[a-z])\d+$", "", path)


def _save_disks(host, pools: dict[str, Pool], infos: list[host_disks.DiskInfo], now) -> None:
    members = {}  # device path or by-id link → (pool, role)
    for pool in pools.values():
        for vdev in pool.vdevs.filter(type="disk"):
            members[_whole_disk(vdev.path)] = (pool, vdev.role)
    Disk.objects.filter(host=host).delete()
    rows = []
    for info in infos:
        pool, role = members.get(info.by_id) or members.get(info.path) or (None, "")
        rows.append(
            Disk(
                host=host,
                name=info.name,
                path=info.path,
                by_id=info.by_id,
                size=info.size,
                model=info.model,
                serial=info.serial,
                media=info.media,
                fstype=info.fstype,
                mounted=info.mounted,
                pool=pool,
                vdev_role=role,
                observed_at=now,
            )
        )
    Disk.objects.bulk_create(rows)


def inventory_refresh_start(*, host: Host, user) -> Operation:
    from pools.tasks import inventory_refresh_task

    return operation_start(
        kind="inventory.refresh",
        target=f"host:{host.name}:inventory",
        host=host,
        user=user,
        task=inventory_refresh_task,
    )


def inventory_refresh_run(*, operation_id: int) -> None:
    with operation_tracking(operation_id) as tracker:
        if tracker:
            tracker.progress(10, "Reading pools, disks, datasets and snapshots")
            inventory_refresh(host=tracker.op.host, operation=tracker.op)
            tracker.progress(100, "Inventory refreshed")


# --- pools -----------------------------------------------------------------------------------------
def pool_create_start(
    *, host: Host, user, name: str, layout: PoolLayout, pool_props: dict, root_props: dict, force: bool = False
) -> Operation:
    """Check everything against the inventory now; the worker runs `zpool create` and refreshes."""
    errors = {}
    try:
        argv = zpool.create_argv(name, layout, pool_props=pool_props, root_props=root_props, force=force)
    except names.InvalidName as exc:
        raise ValidationError({"name": str(exc)}) from None
    except InvalidLayout as exc:
        raise ValidationError({"disks": str(exc)}) from None
    except names.PropertyErrors as exc:
        raise ValidationError(exc.problems) from None
    if Pool.objects.filter(host=host, name=name).exists():
        errors["name"] = f"{host.name} already has a pool named {name}."
    try:
        _disks_free(host, layout.disks())
    except ValidationError as exc:
        errors.update(exc.message_dict)
    if errors:
        raise ValidationError(errors)
    return _command_start(
        host=host, user=user, kind="pool.create", target=f"pool:{name}", argvs=[argv], done=f"Pool {name} created"
    )


def pool_destroy_start(*, host: Host, user, name: str, confirm: str) -> Operation:
    """Destroy, then clear the members' labels so the disks are free again (a destroyed pool's label blocks reuse)."""
    if confirm != name:
        raise ValidationError({"confirm": f"Type the pool's name ({name}) to destroy it."})
    _require_pool(host, name, "name")
    _not_shared(host, name)
    members = Vdev.objects.filter(pool__host=host, pool__name=name, type="disk").exclude(path="")
    argvs = [zpool.destroy_argv(name)] + [
        zpool.labelclear_argv(path) for path in members.values_list("path", flat=True)
    ]
    return _command_start(
        host=host, user=user, kind="pool.destroy", target=f"pool:{name}", argvs=argvs, done=f"Pool {name} destroyed"
    )


# --- simple storage commands: checked here, run by the worker, followed by a refresh -----------------
def _command_start(*, host: Host, user, kind: str, target: str, argvs: list[list[str]], done: str) -> Operation:
    from pools.tasks import storage_command_task

    return operation_start(
        kind=kind,
        target=f"host:{host.name}:{target}",
        host=host,
        user=user,
        task=storage_command_task,
        params={"argvs": argvs, "done": done},
    )


def storage_command_run(*, operation_id: int) -> None:
    with operation_tracking(operation_id) as tracker:
        if tracker:
            op = tracker.op
            t = transport_for(op.host, user=op.user, operation=op)
            argvs = op.params["argvs"]
            for i, argv in enumerate(argvs):
                tracker.progress(int(80 * i / len(argvs)), " ".join(argv[:3]) + " …")
                t.run(argv, timeout=600, mutating=True)
            tracker.progress(85, "Refreshing the inventory")
            inventory_refresh(host=op.host, operation=op)
            tracker.progress(100, op.params["done"])


def _checked(call):
    """Turn the host layer's refusals into field errors."""
    try:
        return call()
    except names.InvalidName as exc:
        raise ValidationError({"name": str(exc)}) from None
    except names.PropertyErrors as exc:
        raise ValidationError(exc.problems) from None
    except InvalidLayout as exc:
        raise ValidationError(str(exc)) from None


def _require_pool(host, name: str, field: str = "pool") -> None:
    if not Pool.objects.filter(host=host, name=name).exists():
        raise ValidationError({field: f"{host.name} has no pool named {name}."})


def _snapshot(host, full: str, field: str = "snapshot") -> Snapshot:
    """dataset@name from the inventory, or a field error."""
    dataset_name, _, snap = full.partition("@")
    row = Snapshot.objects.filter(host=host, dataset__name=dataset_name, name=snap).select_related("dataset").first()
    if row is None:
        raise ValidationError({field: f"No snapshot {full} on {host.name}."})
    return row


def _dataset(host, name) -> Dataset:
    dataset = Dataset.objects.filter(host=host, name=name).first()
    if dataset is None:
        raise ValidationError({"name": f"{host.name} has no dataset {name} (refresh the inventory?)."})
    return dataset


def _new_dataset_name(host, name: str, field: str) -> None:
    """A dataset about to appear (create, rename, clone): not taken, and its parent is a filesystem."""
    if Dataset.objects.filter(host=host, name=name).exists():
        raise ValidationError({field: f"{name} exists already."})
    parent = name.rsplit("/", 1)[0]
    if not Dataset.objects.filter(host=host, name=parent, type="filesystem").exists():
        raise ValidationError({field: f"The parent {parent} is not a filesystem on {host.name}."})


def dataset_create_start(*, host, user, name: str, props: dict, volume_size: str | None = None) -> Operation:
    argv = _checked(lambda: zfs.create_argv(name, props, volume_size=volume_size))
    _new_dataset_name(host, name, "name")
    kind = "zvol" if volume_size else "dataset"
    return _command_start(
        host=host, user=user, kind=f"{kind}.create", target=f"dataset:{name}", argvs=[argv], done=f"Created {name}"
    )


def dataset_set_start(*, host, user, name: str, props: dict) -> Operation:
    _dataset(host, name)
    argv = _checked(lambda: zfs.set_argv(name, props))
    return _command_start(
        host=host,
        user=user,
        kind="dataset.set",
        target=f"dataset:{name}",
        argvs=[argv],
        done=f"Set {', '.join(props)} on {name}",
    )


def dataset_inherit_start(*, host, user, name: str, key: str) -> Operation:
    _dataset(host, name)
    argv = _checked(lambda: zfs.inherit_argv(name, key))
    return _command_start(
        host=host,
        user=user,
        kind="dataset.inherit",
        target=f"dataset:{name}",
        argvs=[argv],
        done=f"{key} on {name} is inherited again",
    )


def dataset_destroy_start(*, host, user, name: str, confirm: str) -> Operation:
    dataset = _dataset(host, name)
    if confirm != name:
        raise ValidationError({"confirm": f"Type the dataset's name ({name}) to destroy it."})
    if dataset.depth == 0:
        raise ValidationError({"name": "That is the pool's root dataset: destroy the pool instead."})
    _not_shared(host, name)
    argv = _checked(lambda: zfs.destroy_argv(name, recursive=True))
    return _command_start(
        host=host, user=user, kind="dataset.destroy", target=f"dataset:{name}", argvs=[argv], done=f"Destroyed {name}"
    )


def snapshot_create_start(*, host, user, dataset: str, name: str, recursive: bool = False) -> Operation:
    _dataset(host, dataset)
    full = f"{dataset}@{name}"
    argv = _checked(lambda: zfs.snapshot_argv([full], recursive=recursive))
    if Snapshot.objects.filter(dataset__host=host, dataset__name=dataset, name=name).exists():
        raise ValidationError({"name": f"{full} exists already."})
    return _command_start(
        host=host, user=user, kind="snapshot.create", target=f"dataset:{dataset}", argvs=[argv], done=f"Took {full}"
    )


def snapshot_rollback_start(*, host, user, snapshot: str, destroy_newer: bool) -> Operation:
    target = _snapshot(host, snapshot)
    dataset_name, snap = target.dataset.name, target.name
    newer = Snapshot.objects.filter(dataset=target.dataset, created_at__gt=target.created_at).count()
    if newer and not destroy_newer:
        raise ValidationError(
            {
                "destroy_newer": f"Rolling back to {snapshot} destroys {newer} newer snapshot"
                f"{'s' if newer > 1 else ''}; confirm to go on."
            }
        )
    argv = _checked(lambda: zfs.rollback_argv(snapshot, destroy_newer=bool(newer)))
    return _command_start(
        host=host,
        user=user,
        kind="snapshot.rollback",
        target=f"dataset:{dataset_name}",
        argvs=[argv],
        done=f"{dataset_name} is back at {snap}",
    )


def snapshot_destroy_start(*, host, user, snapshots: list[str]) -> Operation:
    if not snapshots:
        raise ValidationError({"snapshots": "Choose at least one snapshot."})
    for full in snapshots:
        row = _snapshot(host, full, "snapshots")
        if row.holds:
            raise ValidationError({"snapshots": f"{full} is held ({row.holds}): release it first."})
    argvs = [_checked(lambda f=full: zfs.destroy_argv(f)) for full in snapshots]
    datasets = sorted({s.split("@")[0] for s in snapshots})
    return _command_start(
        host=host,
        user=user,
        kind="snapshot.destroy",
        target=f"dataset:{','.join(datasets)}"[:250],
        argvs=argvs,
        done=f"Destroyed {len(snapshots)} snapshot{'s' if len(snapshots) > 1 else ''}",
    )


def pool_scrub_start(*, host, user, pool: str, action: str) -> Operation:
    _require_pool(host, pool)
    argv = _checked(lambda: zpool.scrub_argv(pool, action))
    return _command_start(
        host=host,
        user=user,
        kind=f"pool.scrub.{action}",
        target=f"pool:{pool}:scrub",
        argvs=[argv],
        done={"start": "Scrub started", "pause": "Scrub paused", "stop": "Scrub stopped"}[action],
    )


# --- periodic snapshot tasks -------------------------------------------------------------------------
def snapshot_tasks_run_due() -> int:
    """Beat, every minute: start each due task as an operation on its host's queue."""
    from pools.models import SnapshotTask

    now = timezone.now()
    started = 0
    for task in SnapshotTask.objects.filter(enabled=True).select_related("host"):
        if task.is_due(now):
            try:
                snapshot_task_start(task=task, now=now)
                started += 1
            except ValidationError:
                pass  # its previous run is still going: next minute
    return started


def snapshot_task_start(*, task, now, user=None) -> Operation:
    """Take this round's snapshot and prune what the retention rules no longer keep, in one operation."""
    full = f"{task.dataset}@{task.snapshot_name(now)}"
    argvs = [_checked(lambda: zfs.snapshot_argv([full], recursive=task.recursive))]
    from pools.selectors import retention_victims

    argvs += [zfs.destroy_argv(s.full_name) for s in retention_victims(task=task, now=now, taking_one=True)]
    op = _command_start(
        host=task.host,
        user=user,
        kind="snapshot.task",
        target=f"snapshot-task:{task.pk}",
        argvs=argvs,
        done=f"Took {full}; pruned {len(argvs) - 1}",
    )
    type(task).objects.filter(pk=task.pk).update(last_run_at=now)
    return op


def snapshot_task_save(*, host, form):
    task = form.save(commit=False)
    task.host = host
    task.save()
    return task


def snapshot_task_delete(*, host, pk: int) -> None:
    from pools.models import SnapshotTask

    SnapshotTask.objects.filter(host=host, pk=pk).delete()


# --- export and import -------------------------------------------------------------------------------
def pool_export_start(*, host, user, name: str) -> Operation:
    _require_pool(host, name, "name")
    _not_shared(host, name)
    return _command_start(
        host=host,
        user=user,
        kind="pool.export",
        target=f"pool:{name}",
        argvs=[zpool.export_argv(name)],
        done=f"Pool {name} exported",
    )


def pool_import_scan_start(*, host, user) -> Operation:
    from pools.tasks import pool_import_scan_task

    return operation_start(
        kind="pool.import.scan",
        target=f"host:{host.name}:import-scan",
        host=host,
        user=user,
        task=pool_import_scan_task,
    )


def pool_import_scan_run(*, operation_id: int) -> None:
    """A read: `zpool import` scans the disks; what it finds is stored for the page to list."""
    from pools.models import ImportablePool

    with operation_tracking(operation_id) as tracker:
        if tracker:
            op = tracker.op
            tracker.progress(10, "Scanning disks for pools")
            result = transport_for(op.host, user=op.user, operation=op).run(
                ["zpool", "import"], timeout=300, check=False
            )
            found = zpool.parse_import(result.stdout)
            now = timezone.now()
            with transaction.atomic():
                ImportablePool.objects.filter(host=op.host).delete()
                ImportablePool.objects.bulk_create(
                    [
                        ImportablePool(
                            host=op.host,
                            name=p.name,
                            guid=p.guid,
                            state=p.state,
                            status=p.status,
                            action=p.action,
                            observed_at=now,
                        )
                        for p in found
                    ]
                )
            tracker.progress(100, f"Found {len(found)} pool{'s' if len(found) != 1 else ''} to import")


def pool_import_start(*, host, user, guid: str, new_name: str = "") -> Operation:
    from pools.models import ImportablePool

    candidate = ImportablePool.objects.filter(host=host, guid=guid).first()
    if candidate is None:
        raise ValidationError({"guid": "That pool is not in the last scan: scan again."})
    name = new_name or candidate.name
    if Pool.objects.filter(host=host, name=name).exists():
        raise ValidationError(
            {"new_name": f"{host.name} already has a pool named {name}: import it under another name."}
        )
    argv = _checked(lambda: zpool.import_argv(guid, new_name))
    ImportablePool.objects.filter(pk=candidate.pk).delete()
    return _command_start(
        host=host, user=user, kind="pool.import", target=f"pool:{name}", argvs=[argv], done=f"Pool {name} imported"
    )


def pool_device_start(*, host, user, pool: str, action: str, device: str = "", new_device: str = "") -> Operation:
    """Offline, online, replace, attach or detach a member disk, or clear a pool's (or one device's) errors."""
    _require_pool(host, pool)
    member = Vdev.objects.filter(pool__host=host, pool__name=pool, type="disk", path=device).select_related("parent")
    member = member.first() if device else None
    if device and member is None:
        raise ValidationError({"device": f"{device} is not a disk of {pool}."})
    if action == "detach" and (member.parent is None or member.parent.type not in ("mirror", "replacing", "spare")):
        raise ValidationError({"device": "Only a disk of a mirror (or one being replaced) can be detached."})
    if action == "attach" and member.role not in ("data", "special", "log"):
        raise ValidationError({"device": "A disk is attached next to a data, special or log disk."})
    if action == "attach" and member.parent is not None and member.parent.type != "mirror":
        raise ValidationError(
            {"device": f"{device} is in a {member.parent.type}: attach works on mirrors and single disks."}
        )
    if new_device:
        disk = Disk.objects.filter(host=host).filter(Q(by_id=new_device) | Q(path=new_device)).first()
        if disk is None or not disk.is_free:
            raise ValidationError(
                {"new_device": f"{new_device} is not a free disk ({disk.usage if disk else 'unknown'})."}
            )
    argvs = [_checked(lambda: zpool.device_argv(action, pool, device, new_device))]
    if action == "detach":  # detach leaves the ZFS label, which keeps the disk from counting as free
        argvs.append(zpool.labelclear_argv(device))
    done = {
        "offline": "Taken offline",
        "online": "Back online",
        "clear": "Errors cleared",
        "replace": "Replacing: the resilver runs in the background (see the pool)",
        "attach": "Attached: the new disk resilvers in the background (see the pool)",
        "detach": "Detached",
    }[action]
    return _command_start(host=host, user=user, kind=f"pool.{action}", target=f"pool:{pool}", argvs=argvs, done=done)


def pool_trim_start(*, host, user, pool: str, action: str) -> Operation:
    _require_pool(host, pool)
    argv = _checked(lambda: zpool.trim_argv(pool, action))
    done = {"start": "TRIM started", "suspend": "TRIM suspended", "cancel": "TRIM cancelled"}[action]
    return _command_start(
        host=host, user=user, kind=f"pool.trim.{action}", target=f"pool:{pool}:trim", argvs=[argv], done=done
    )


def pool_add_start(*, host, user, pool: str, layout: PoolLayout, force: bool = False) -> Operation:
    """Grow a pool: data vdevs (permanent: a raidz vdev cannot be removed again), or log/special/cache/spare."""
    _require_pool(host, pool)
    try:
        argv = zpool.add_argv(pool, layout, force=force)
    except InvalidLayout as exc:
        raise ValidationError({"disks": str(exc)}) from None
    _disks_free(host, layout.disks())
    return _command_start(
        host=host, user=user, kind="pool.add", target=f"pool:{pool}", argvs=[argv], done=f"Added to {pool}"
    )


def _disks_free(host, paths: list[str]) -> None:
    known = {d.by_id or d.path: d for d in Disk.objects.filter(host=host).select_related("pool")}
    missing = [p for p in paths if p not in known]
    if missing:
        raise ValidationError({"disks": "Not on this host (refresh the inventory?): " + ", ".join(missing)})
    busy = [f"{p} ({known[p].usage})" for p in paths if not known[p].is_free]
    if busy:
        raise ValidationError({"disks": "Not free: " + ", ".join(busy)})


# --- rename, clone, holds ------------------------------------------------------------------------------
def dataset_rename_start(*, host, user, name: str, new_name: str) -> Operation:
    _dataset(host, name)
    try:
        argv = zfs.rename_argv(name, new_name)
    except names.InvalidName as exc:
        raise ValidationError({"new_name": str(exc)}) from None
    _new_dataset_name(host, new_name, "new_name")
    return _command_start(
        host=host,
        user=user,
        kind="dataset.rename",
        target=f"dataset:{name}",
        argvs=[argv],
        done=f"{name} is now {new_name}",
    )


def snapshot_clone_start(*, host, user, snapshot: str, target: str) -> Operation:
    _snapshot(host, snapshot)
    try:
        argv = zfs.clone_argv(snapshot, target)
    except names.InvalidName as exc:
        raise ValidationError({"target": str(exc)}) from None
    _new_dataset_name(host, target, "target")
    return _command_start(
        host=host,
        user=user,
        kind="snapshot.clone",
        target=f"dataset:{target}",
        argvs=[argv],
        done=f"Cloned {snapshot} to {target}",
    )


def snapshot_hold_start(*, host, user, snapshot: str, tag: str, release: bool = False) -> Operation:
    row = _snapshot(host, snapshot)
    dataset_name = row.dataset.name
    if release and not row.holds:
        raise ValidationError({"tag": f"{snapshot} has no holds."})
    try:
        argv = zfs.hold_argv(snapshot, tag, release=release)
    except names.InvalidName as exc:
        raise ValidationError({"tag": str(exc)}) from None
    return _command_start(
        host=host,
        user=user,
        kind="snapshot.release" if release else "snapshot.hold",
        target=f"dataset:{dataset_name}",
        argvs=[argv],
        done=f"{'Released' if release else 'Held'} {snapshot} ({tag})",
    )


def media_speed_save(*, media: str, mb_s: int, iops: int) -> None:
    from pools.models import MediaSpeed

    if media not in ("hdd", "ssd", "nvme"):
        raise ValidationError({"media": "One of hdd, ssd, nvme."})
    if not (1 <= mb_s <= 100_000 and 1 <= iops <= 10_000_000):
        raise ValidationError({"mb_s": "MB/s from 1 to 100,000 and IOPS from 1 to 10,000,000."})
    MediaSpeed.objects.update_or_create(media=media, defaults={"mb_s": mb_s, "iops": iops})


# --- shares: rows are the desired state; one operation renders, validates and applies both protocols ---------
def _words(text: str) -> list[str]:
    return [w for w in re.split(r"[\s,]+", text or "") if w]


def share_settings(host) -> ShareSettings:
    return ShareSettings.objects.get_or_create(host=host)[0]


def _smb_spec(row) -> shares.SmbShareSpec:
    return shares.SmbShareSpec(
        name=row.name,
        path=row.path,
        comment=row.comment,
        preset=row.preset,
        read_only=row.read_only,
        browseable=row.browseable,
        guest_ok=row.guest_ok,
        valid_users=_words(row.valid_users),
        hosts_allow=_words(row.hosts_allow),
        hosts_deny=_words(row.hosts_deny),
        previous_versions=row.previous_versions,
        snapshot_prefix=row.snapshot_prefix,
        time_machine_quota=row.time_machine_quota,
    )


def _nfs_spec(row) -> shares.NfsExportSpec:
    return shares.NfsExportSpec(
        path=row.path,
        clients=row.client_list,
        read_only=row.read_only,
        squash=row.squash,
        anonuid=row.anonuid,
        anongid=row.anongid,
        sec=row.sec,
        async_writes=row.async_writes,
    )


def _globals(settings) -> tuple[shares.SmbGlobals, shares.NfsGlobals]:
    return (
        shares.SmbGlobals(
            min_protocol=settings.smb_min_protocol,
            multichannel=settings.smb_multichannel,
            encryption=settings.smb_encryption,
            signing=settings.smb_signing,
            workgroup=settings.workgroup,
            server_string=settings.server_string,
        ),
        shares.NfsGlobals(v3=settings.nfs_v3, v4=settings.nfs_v4, threads=settings.nfs_threads),
    )


def shares_render(host, *, smb_rows=None, nfs_rows=None, settings=None) -> dict[str, str]:
    """Every file Tarn owns for this host's shares, from the rows (or from candidate rows being checked)."""
    smb_rows = list(SmbShare.objects.filter(host=host)) if smb_rows is None else smb_rows
    nfs_rows = list(NfsExport.objects.filter(host=host)) if nfs_rows is None else nfs_rows
    smb_globals, nfs_globals = _globals(settings or share_settings(host))
    try:
        return {
            "smb": shares.render_smb(smb_globals, [_smb_spec(r) for r in smb_rows]),
            "exports": shares.render_exports([_nfs_spec(r) for r in nfs_rows]),
            "nfs_conf": shares.render_nfs_conf(nfs_globals),
        }
    except shares.InvalidShare as exc:
        raise ValidationError(exc.problems) from None


def _share_path(host, dataset_name: str) -> str:
    """A share's path is its dataset's mountpoint: inside a pool by construction, never into .zfs."""
    dataset = Dataset.objects.filter(host=host, name=dataset_name, type="filesystem").first()
    if dataset is None:
        raise ValidationError({"dataset": f"{host.name} has no filesystem dataset {dataset_name}."})
    if not dataset.mountpoint.startswith("/") or dataset.properties.get("mountpoint", {}).get("value") in (
        "none",
        "legacy",
    ):
        raise ValidationError({"dataset": f"{dataset_name} is not mounted (mountpoint {dataset.mountpoint})."})
    return dataset.mountpoint


def _share_row(model, host, data: dict, pk: int | None, path: str = ""):
    """The share or export being saved (not yet written) with its path (from the dataset unless given: a dataset
    the operation will create), and the host's others."""
    row = model.objects.filter(host=host, pk=pk).first() if pk else model(host=host)
    if pk and row is None:
        raise ValidationError({"dataset": "That share no longer exists."})
    for key, value in data.items():
        setattr(row, key, value)
    row.path = path or _share_path(host, row.dataset)
    return row, model.objects.filter(host=host).exclude(pk=row.pk)


def _shares_apply_start(host, user, what: str, parts, create: list[list[str]] | None = None) -> Operation:
    """parts: which of Tarn's files the change touches ("smb", "nfs"); the others are left alone."""
    from pools.tasks import shares_apply_task

    return operation_start(
        kind="shares.apply", target=f"host:{host.name}:shares", host=host, user=user, task=shares_apply_task,
        params={"what": what, "parts": list(parts), **({"create": create} if create else {})},
    )  # fmt: skip


# Dataset properties each SMB preset wants when the share form creates its dataset (documented in the README).
PRESET_DATASET_PROPERTIES = {
    "general": {"xattr": "sa"},
    "multi_user": {"xattr": "sa", "acltype": "posix"},
    "time_machine": {"xattr": "sa"},
    "private": {"xattr": "sa"},
    "archive": {"xattr": "sa", "compression": "zstd", "recordsize": "1M", "atime": "off"},
}


def _new_share_dataset(host, name: str, preset: str) -> tuple[list[list[str]], str]:
    """The argvs that make a share's new dataset (`zfs create` with the preset's properties, then its root folder
    writable by Samba users through the shared group, except for the read-only archive) and its future path."""
    try:
        argv = zfs.create_argv(name, PRESET_DATASET_PROPERTIES.get(preset, {}))
    except (names.InvalidName, names.PropertyErrors) as exc:
        raise ValidationError({"new_dataset": str(exc)}) from None
    _new_dataset_name(host, name, "new_dataset")
    parent = _share_path(host, name.rsplit("/", 1)[0])
    path = f"{parent.rstrip('/')}/{name.rsplit('/', 1)[1]}"
    if preset == "archive":
        return [argv], path
    return [argv, shares.group_folder_argv(path)], path


def smb_share_save_start(*, host, user, data: dict, pk: int | None = None, new_dataset: str = "") -> Operation:
    """Save a share and apply; with new_dataset, the operation first creates it with the preset's properties."""
    create, path = None, ""
    if new_dataset:
        create, path = _new_share_dataset(host, new_dataset, data.get("preset", "general"))
        data = {**data, "dataset": new_dataset}
    row, others = _share_row(SmbShare, host, data, pk, path)
    if others.filter(name__iexact=row.name).exists():
        raise ValidationError({"name": f"{host.name} already has a share named {row.name} (names ignore case)."})
    shares_render(host, smb_rows=[*others, row])  # every value checked, the whole file renders
    what = f"SMB share {row.name}" + (f" on new dataset {new_dataset}" if new_dataset else "")
    with transaction.atomic():
        row.save()
        return _shares_apply_start(host, user, what, ["smb"], create=create)


def smb_share_delete_start(*, host, user, pk: int, confirm: str) -> Operation:
    row = SmbShare.objects.filter(host=host, pk=pk).first()
    if row is None:
        raise ValidationError({"name": "That share no longer exists."})
    if confirm != row.name:
        raise ValidationError({"confirm": f"Type the share's name ({row.name}) to remove it."})
    with transaction.atomic():
        row.delete()
        return _shares_apply_start(host, user, f"removed SMB share {row.name}", ["smb"])


def smb_share_folder_start(*, host, user, pk: int, owner: str, group: str, mode: str) -> Operation:
    """Owner, group and mode of a share's root folder: who may write there once Samba lets them in."""
    from pools.selectors import share_folder_accounts
    from pools.tasks import share_folder_task

    row = SmbShare.objects.filter(host=host, pk=pk).first()
    if row is None:
        raise ValidationError({"owner": "That share no longer exists."})
    owners, groups = share_folder_accounts(host=host)
    if owner not in owners:
        raise ValidationError({"owner": f"root or one of {host.name}'s Samba users."})
    if group not in groups:
        raise ValidationError({"group": f"{shares.SHARED_GROUP}, root or a Samba user's own group."})
    try:
        argv = shares.folder_argv(row.path, owner, group, mode)
    except shares.InvalidShare as exc:
        raise ValidationError(exc.problems) from None
    return operation_start(
        kind="shares.folder", target=f"host:{host.name}:smb-share:{row.name}", host=host, user=user,
        task=share_folder_task, params={"argv": argv, "path": row.path},
    )  # fmt: skip


def share_folder_run(*, operation_id: int) -> None:
    with operation_tracking(operation_id) as tracker:
        if tracker:
            op = tracker.op
            t = transport_for(op.host, user=op.user, operation=op)
            path = op.params["path"]
            before = shares.folder_owner(t, path)
            t.run(op.params["argv"], timeout=60, mutating=True)
            tracker.progress(100, f"{path}: {before} → {shares.folder_owner(t, path)}")


def nfs_export_save_start(*, host, user, data: dict, pk: int | None = None) -> Operation:
    row, others = _share_row(NfsExport, host, data, pk)
    if others.filter(path=row.path).exists():
        raise ValidationError({"dataset": f"{row.path} is exported already: add the clients to that export."})
    shares_render(host, nfs_rows=[*others, row])
    with transaction.atomic():
        row.save()
        return _shares_apply_start(host, user, f"NFS export {row.path}", ["nfs"])


def nfs_export_delete_start(*, host, user, pk: int) -> Operation:
    row = NfsExport.objects.filter(host=host, pk=pk).first()
    if row is None:
        raise ValidationError({"path": "That export no longer exists."})
    with transaction.atomic():
        row.delete()
        return _shares_apply_start(host, user, f"removed NFS export {row.path}", ["nfs"])


def share_settings_save_start(*, host, user, data: dict) -> Operation:
    settings = share_settings(host)
    for key, value in data.items():
        setattr(settings, key, value)
    shares_render(host, settings=settings)
    with transaction.atomic():
        settings.save()
        return _shares_apply_start(host, user, "share settings", ["smb", "nfs"])


def shares_apply_run(*, operation_id: int) -> None:
    """Render from the rows, then SMB (testparm → write → reload) and NFS (write → exportfs -ra, nfs.conf)."""
    with operation_tracking(operation_id) as tracker:
        if tracker:
            op = tracker.op
            t = transport_for(op.host, user=op.user, operation=op)
            if op.params.get("create"):
                tracker.progress(5, "Creating the share's dataset")
                for argv in op.params["create"]:
                    t.run(argv, timeout=600, mutating=True)
                inventory_refresh(host=op.host, operation=op)
            files, parts = shares_render(op.host), op.params.get("parts", ["smb", "nfs"])
            smb = nfs = conf = False
            if "smb" in parts:
                tracker.progress(20, "Checking the Samba configuration with testparm")
                smb = shares.apply_smb(t, files["smb"])
                for share in SmbShare.objects.filter(host=op.host, preset="private"):
                    for name in SambaUser.objects.filter(host=op.host, enabled=True).values_list("username", flat=True):
                        shares.user_dir(t, share.path, name)
            if "nfs" in parts:
                tracker.progress(60, "Exporting NFS")
                nfs = shares.apply_exports(t, files["exports"])
                conf = shares.apply_nfs_conf(t, files["nfs_conf"])
            changed = [w for w, c in (("smb.conf include", smb), ("exports", nfs), ("nfs.conf", conf)) if c]
            tracker.progress(100, f"Applied {op.params.get('what', '')}: " + (", ".join(changed) or "nothing changed"))


# --- Samba users: the password travels only in the queued message (operation_start's secret) -----------------
def samba_user_start(*, host, user, action: str, username: str, password: str = "") -> Operation:
    from pools.tasks import samba_user_task

    try:
        shares.check_user(username)
        if action in ("add", "password"):
            shares.check_password(password)
    except shares.InvalidShare as exc:
        raise ValidationError(exc.problems) from None
    exists = SambaUser.objects.filter(host=host, username=username).exists()
    if action == "add" and exists:
        raise ValidationError({"username": f"{username} exists already on {host.name}."})
    if action != "add" and not exists:
        raise ValidationError({"username": f"{host.name} has no Samba user {username}."})
    if action not in ("add", "password", "enable", "disable", "delete"):
        raise ValidationError({"action": "One of add, password, enable, disable, delete."})
    return operation_start(
        kind=f"samba.user.{action}",
        target=f"host:{host.name}:samba-user:{username}",
        host=host,
        user=user,
        task=samba_user_task,
        params={"action": action, "username": username},
        secret=password or None,
    )


def samba_user_run(*, operation_id: int, secret: str | None = None) -> None:

    with operation_tracking(operation_id) as tracker:
        if tracker:
            op = tracker.op
            action, name = op.params["action"], op.params["username"]
            t = transport_for(op.host, user=op.user, operation=op)
            if action == "add":
                shares.user_add(t, name, secret or "")
                SambaUser.objects.get_or_create(host=op.host, username=name)
            elif action == "password":
                shares.user_password(t, name, secret or "")
            elif action in ("enable", "disable"):
                shares.user_enable(t, name, action == "enable")
                SambaUser.objects.filter(host=op.host, username=name).update(enabled=action == "enable")
            elif action == "delete":
                shares.user_delete(t, name)
                SambaUser.objects.filter(host=op.host, username=name).delete()
            tracker.progress(100, {"add": "Added", "password": "Password set", "enable": "Enabled",
                                   "disable": "Disabled", "delete": "Deleted"}[action] + f": {name}")  # fmt: skip


def _not_shared(host, dataset: str) -> None:
    """A pool or dataset clients use is not destroyed or exported from under them (benchmarks: not built yet)."""
    from pools.selectors import share_users_of

    users = share_users_of(host=host, dataset=dataset)
    if users:
        raise ValidationError({"name": f"{dataset} is in use by {', '.join(users[:5])}: remove those first."})


def share_status_refresh(*, host, operation=None) -> None:
    from dataclasses import asdict

    from pools.models import ShareStatus

    sessions, clients = shares.status(transport_for(host, operation=operation))
    ShareStatus.objects.update_or_create(
        host=host,
        defaults={"smb_sessions": [asdict(s) for s in sessions], "nfs_clients": clients, "observed_at": timezone.now()},
    )


def share_status_start(*, host, user) -> Operation:
    from pools.tasks import share_status_task

    return operation_start(
        kind="shares.status", target=f"host:{host.name}:share-status", host=host, user=user, task=share_status_task
    )


def share_status_run(*, operation_id: int) -> None:
    with operation_tracking(operation_id) as tracker:
        if tracker:
            share_status_refresh(host=tracker.op.host, operation=tracker.op)
            tracker.progress(100, "Connections read")


# --- scrub schedules -------------------------------------------------------------------------------------------
def scrub_schedule_save(*, host, pool: str, every_days: int | None) -> None:
    """every_days None or 0 removes the schedule."""
    from pools.models import ScrubSchedule

    _require_pool(host, pool)
    if not every_days:
        ScrubSchedule.objects.filter(host=host, pool=pool).delete()
        return
    if not 1 <= every_days <= 365:
        raise ValidationError({"every_days": "From 1 to 365 days."})
    ScrubSchedule.objects.update_or_create(host=host, pool=pool, defaults={"every_days": every_days})


def scrub_schedules_run_due() -> int:
    """Beat, hourly: start a scrub for each due schedule whose pool is present and not already scanning."""
    from pools.models import ScrubSchedule

    now, started = timezone.now(), 0
    for schedule in ScrubSchedule.objects.select_related("host"):
        pool = Pool.objects.filter(host=schedule.host, name=schedule.pool).first()
        if pool is None or not schedule.is_due(now) or pool.scan_state == "SCANNING":
            continue
        try:
            pool_scrub_start(host=schedule.host, user=None, pool=schedule.pool, action="start")
        except ValidationError:
            continue  # something else runs on the pool: next hour
        ScrubSchedule.objects.filter(pk=schedule.pk).update(last_run_at=now)
        started += 1
    return started
