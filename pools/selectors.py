"""Reads for storage: always from the inventory in the database, never from zfs on a page load."""

import re
from dataclasses import dataclass, field
from datetime import timedelta

from django.core.paginator import Paginator
from django.db.models import Count, F, Max, Q, Sum
from django.db.models.functions import Substr
from django.utils import timezone

from appliance.choices import OperationStatus
from appliance.fleet import BAD, OK, WARN, Cell
from appliance.models import Operation
from hostlib.disks import whole_disk
from hostlib.names import DATASET_PROPERTIES
from pools.choices import SNAPSHOT_BUDGET, DatasetType, VdevRole
from pools.estimates import PER_DISK, estimate
from pools.hooks import notes_for, panels_for
from pools.models import Dataset, Disk, ImportablePool, MediaSpeed, Pool, ScrubSchedule, Snapshot, SnapshotTask, Vdev


def pool_list(*, host):
    return Pool.objects.filter(host=host)


def pools_by_host(*, hosts) -> dict[int, list[Pool]]:
    """Every pool of these hosts in one query, grouped by host id (for the dashboard)."""
    grouped: dict[int, list[Pool]] = {}
    for pool in Pool.objects.filter(host__in=hosts):
        grouped.setdefault(pool.host_id, []).append(pool)
    return grouped


def dashboard_pools(*, hosts) -> dict:
    """The dashboard's rows: each host with its pools (health, capacity)."""
    grouped = pools_by_host(hosts=hosts)
    return {"hosts": [(host, grouped.get(host.pk, [])) for host in hosts]}


def inventory_observed_at(*, host):
    """When the host's storage was last read (disks are always part of a refresh), or None if never."""
    return Disk.objects.filter(host=host).aggregate(at=Max("observed_at"))["at"]


def inventory_reading(*, host):
    """The inventory refresh queued or running for the host, or None."""
    active = Operation.objects.filter(host=host, kind="pools.refresh", status__in=OperationStatus.active())
    return active.order_by("-pk").first()


def pool_detail(*, host, pk):
    return Pool.objects.filter(host=host).get(pk=pk)


def pool_panels(*, pool) -> list[tuple[str, dict]]:
    """The sections later apps add to a pool's page: (template, context)."""
    return panels_for(pool=pool)


def pool_vdevs(*, pool):
    """The vdev tree in display order; each row knows its parent's type (to offer detach only in mirrors)."""
    return pool.vdevs.annotate(parent_type=F("parent__type"))


def pool_vdevs_noted(*, pool) -> list:
    """The vdev tree, each disk vdev with `.note`: what later apps say of its disk (its health; pools.hooks)."""
    vdevs = list(pool_vdevs(pool=pool))
    disks = list(Disk.objects.filter(host=pool.host, pool=pool))
    by_path = {key: d.name for d in disks for key in (d.by_id, d.path) if key}
    notes = notes_for(host=pool.host, disks=disks)
    for v in vdevs:
        v.note = notes.get(by_path.get(whole_disk(v.path), "")) if v.type == "disk" else None
    return vdevs


def disk_vdev(*, host, name: str):
    """The disk vdev a disk (by its inventory name) is in, with its pool, or None: what Replace needs."""
    disk = Disk.objects.filter(host=host, name=name, pool__isnull=False).first()
    if disk is None:
        return None
    keys = {k for k in (disk.by_id, disk.path) if k}
    return next(
        (
            v
            for v in Vdev.objects.filter(pool=disk.pool, type="disk").select_related("pool")
            if whole_disk(v.path) in keys
        ),
        None,
    )


LIVE = frozenset({"ONLINE", "DEGRADED"})  # a leaf in these states still serves its data
CONFIRMED = frozenset({"replace", "attach", "offline"})  # device actions confirmed by a typed name


@dataclass
class DevicePlan:
    """What a device action on one member disk of a pool would do, for its confirmation page and its service alike.

    need: the bytes a new disk must hold (replace, attach); fitting / too_small: the free disks that hold it or not;
    margin (offline): how many more failures the member's top-level vdev survives with it offline (-1: it fails, so
    ZFS refuses; 0: no redundancy left; None: a log or cache device, which holds nothing the pool needs); confirm:
    what must be typed (the device's name, or the pool's when no redundancy would be left) and why."""

    member: Vdev
    top: Vdev
    need: int = 0
    fitting: list = field(default_factory=list)
    too_small: list = field(default_factory=list)
    margin: int | None = None
    confirm: str = ""
    confirm_why: str = ""

    def confirmed(self, typed: str) -> bool:
        return typed in (self.confirm, *([self.member.path] if self.confirm == self.member.name else []))


def device_member(*, pool, device: str):
    """The disk vdev of the pool at this device path (as zpool status -P gives it), with its parent, or None."""
    if not device:
        return None
    return Vdev.objects.filter(pool=pool, type="disk", path=device).select_related("parent", "pool").first()


def device_plan(*, host, member: Vdev, action: str) -> DevicePlan:
    vdevs = {v.pk: v for v in Vdev.objects.filter(pool_id=member.pool_id)}
    top = member
    while top.parent_id in vdevs:
        top = vdevs[top.parent_id]
    plan = DevicePlan(member=member, top=top)
    if action in ("replace", "attach"):
        plan.need = _member_size(host, member)
        free = disk_free(host=host)
        plan.fitting = [d for d in free if d.size >= plan.need]
        plan.too_small = [d for d in free if d.size < plan.need]
    if action == "offline" and member.role not in (VdevRole.LOG, VdevRole.CACHE):
        plan.margin = _margin(top, vdevs, without=member.pk)
    verb = {"replace": "replace it", "attach": "attach a disk to it", "offline": "take it offline"}.get(action, "")
    plan.confirm, plan.confirm_why = member.name, f"Type the device's name ({member.name}) to {verb}."
    if plan.margin == 0:
        plan.confirm = member.pool.name
        plan.confirm_why = (
            f"Taking {member.name} offline leaves {top.name} with no redundancy: one more failure there loses the "
            f"pool. Type the pool's name ({member.pool.name}) to go on."
        )
    return plan


def _member_size(host, member: Vdev) -> int:
    """The member's whole disk as the inventory read it; else (a failed disk is often gone from the machine) the
    size zpool status gives the device."""
    disk = whole_disk(member.path)
    found = Disk.objects.filter(host=host).filter(Q(by_id=disk) | Q(path=disk)).first()
    return found.size if found else member.size


PARITY = re.compile(r"(?:raidz|draid)(\d)")


def _margin(vdev: Vdev, vdevs: dict, without: int) -> int:
    """How many more leaf failures vdev survives with the leaf `without` gone too (-1: it fails now). A mirror (a
    replacing or spare group alike) lives while one child does; RAID-Z and dRAID lose at most their parity."""
    children = [v for v in vdevs.values() if v.parent_id == vdev.pk]
    if not children:
        return 0 if vdev.state in LIVE and vdev.pk != without else -1
    margins = [_margin(child, vdevs, without) for child in children]
    live = [m for m in margins if m >= 0]
    if vdev.type in ("raidz", "draid"):
        parity = PARITY.match(vdev.name)
        left = (int(parity.group(1)) if parity else 1) - (len(margins) - len(live))
        return left if left >= 0 else -1
    return sum(m + 1 for m in live) - 1


def vdev_members(*, host) -> list[dict]:
    """Each top-level vdev's disks by inventory name ({pool, busy, disks}; busy: the pool is scrubbing or
    resilvering), a single-disk vdev on its own, the members of a replacing or spare under their mirror or RAID-Z:
    what testing one disk per vdev at a time goes by."""
    names = {k: d.name for d in Disk.objects.filter(host=host, pool__isnull=False) for k in (d.by_id, d.path) if k}
    vdevs = list(Vdev.objects.filter(pool__host=host).select_related("pool").order_by("pool", "position"))
    parent = {v.pk: v.parent_id for v in vdevs}

    def top(pk):
        while parent.get(pk):
            pk = parent[pk]
        return pk

    groups: dict = {}
    for v in vdevs:
        name = names.get(whole_disk(v.path)) if v.type == "disk" else None
        if name:
            group = groups.setdefault(top(v.pk), {"pool": v.pool.name, "busy": v.pool.scan_state == "SCANNING"})
            group.setdefault("disks", []).append(name)
    return list(groups.values())


def disk_list_noted(*, host) -> list:
    """The host's disks, each with `.note` (pools.hooks)."""
    disks = list(disk_list(host=host))
    notes = notes_for(host=host, disks=disks)
    for d in disks:
        d.note = notes.get(d.name)
    return disks


def pool_datasets(*, pool):
    return pool.datasets.all()


def disk_list(*, host):
    return Disk.objects.filter(host=host).select_related("pool")


def disk_ids(*, hosts) -> dict[tuple[int, str], str]:
    """{(host id, disk name): its /dev/disk/by-id path} for the disks of these hosts that have one (one query)."""
    disks = Disk.objects.filter(host__in=hosts).exclude(by_id="")
    return {(host_id, name): by_id for host_id, name, by_id in disks.values_list("host_id", "name", "by_id")}


def disk_free(*, host):
    return [d for d in disk_list(host=host) if d.is_free]


def snapshot_total(*, host) -> dict:
    total = Dataset.objects.filter(host=host).aggregate(n=Sum("snapshot_count"))["n"] or 0
    return {"total": total, "budget": SNAPSHOT_BUDGET, "over": total > SNAPSHOT_BUDGET}


SNAPSHOT_ORDERS = {"created_at", "name", "used", "referenced"}
BROAD_PREFIX = 2000  # snapshots a name prefix matches past which the page walks its order instead of sorting


def snapshot_search(*, host=None, q: str = "", dataset: str = "", order: str = "-created_at"):
    """The snapshots the page and the API list: of one host (None: every host), of one dataset, and matching q —
    a dataset's name or part of it, the start of a snapshot's name, or dataset@start. Every filter is served by an
    index: dataset ids first (a small table), snapshot names by range on (host, name)."""
    qs = Snapshot.objects.select_related("dataset", "dataset__host")
    datasets = Dataset.objects.all() if host is None else Dataset.objects.filter(host=host)
    mine, known = ({} if host is None else {"host": host}), None
    # Dataset ids imply the host: a filter on ids alone lets the (dataset, …) indexes serve it, where host= beside
    # them had SQLite walk the host's (host, created_at) index through every snapshot it has.
    if dataset:
        qs = qs.filter(dataset_id__in=list(datasets.filter(name=dataset).values_list("id", flat=True)))
    if q:
        in_dataset, at, start = q.partition("@")
        if at:
            ids = list(datasets.filter(name=in_dataset).values_list("id", flat=True))
            qs = qs.filter(dataset_id__in=ids, name__gte=start, name__lt=start + "\uffff")
        else:
            ids = list(datasets.filter(name__icontains=q).values_list("id", flat=True)[:1000])
            named = Q(name__gte=q, name__lt=q + "\uffff", **mine)
            if ids:  # each side of the OR served by its own index, the rows found then sorted
                qs = qs.filter(named | Q(dataset_id__in=ids))
            elif dataset or (known := Snapshot.objects.filter(named).count()) <= BROAD_PREFIX:  # (host, name) index
                qs = qs.filter(named)  # the few found, sorted
            else:  # a prefix most names share (s3 of s0…s99): walked in the page's order, a page found at once;
                # the same test as the range, but one the (host, name) index cannot serve, so SQLite does not sort
                # a hundred thousand rows for 50
                qs = qs.alias(name_start=Substr("name", 1, len(q))).filter(name_start=q, **mine)
    elif not dataset and host is not None:
        qs = qs.filter(host=host)
    if order.lstrip("-") not in SNAPSHOT_ORDERS:
        order = "-created_at"
    tie = "-pk" if order.startswith("-") else "pk"  # same direction as the sort, so the index serves both
    found = qs.order_by(order, tie)
    if known is not None:
        found.known_count = known  # what the index counted: counting the walk would read every snapshot
    return found


def snapshot_page(*, host, page, q="", dataset="", order="-created_at"):
    found = snapshot_search(host=host, q=q, dataset=dataset, order=order)
    pages = Paginator(found, 50)
    if hasattr(found, "known_count"):
        pages.count = found.known_count  # (Paginator.count is a cached property: this is its value)
    return pages.get_page(page)


def layout_estimate(*, host, layout):
    sizes = {d.by_id or d.path: (d.size, d.media) for d in Disk.objects.filter(host=host)}
    return estimate([(v.kind, [sizes[d] for d in v.disks if d in sizes]) for v in layout.data], media_speeds())


def media_speeds() -> dict[str, tuple[int, int]]:
    """Per-disk (MB/s, IOPS) by media type: the defaults, overridden by what an admin entered."""
    return {**PER_DISK, **{m.media: (m.mb_s, m.iops) for m in MediaSpeed.objects.all()}}


def filesystem_names(*, pool) -> list[str]:
    return list(pool.datasets.filter(type=DatasetType.FILESYSTEM).values_list("name", flat=True))


def dataset_properties(*, dataset) -> list[tuple[str, dict]]:
    """The properties Tarn manages, in a stable order, with value and source."""
    return [(key, dataset.properties[key]) for key in DATASET_PROPERTIES if key in dataset.properties]


def snapshot_recent(*, dataset, limit=20):
    return dataset.snapshots.order_by(*Snapshot.NEWEST_FIRST)[:limit]


def snapshot_newer(*, snapshot):
    """The snapshots of its dataset taken after it (what rolling back to it destroys), by the pool's transaction
    group: creation ties within a second. Rows read before Tarn kept createtxg (0) fall back to creation, counting a
    same-second one as newer: the rollback then asks, and zfs destroys only the truly newer."""
    newer = Snapshot.objects.filter(dataset_id=snapshot.dataset_id).exclude(pk=snapshot.pk)
    if snapshot.createtxg:
        return newer.filter(createtxg__gt=snapshot.createtxg)
    return newer.filter(created_at__gte=snapshot.created_at)


def retention_victims(*, task, now, taking_one: bool = False) -> list:
    """Snapshots the task's retention would delete now: only its own (by prefix), oldest first.

    Beyond keep_count newest, or older than keep_days; datasets listed in exclude are left alone.
    taking_one: a new snapshot is being taken in the same run, so it counts as one of the kept.
    """
    excluded = {line.strip() for line in task.exclude.splitlines() if line.strip()}
    datasets = Dataset.objects.filter(host=task.host, name=task.dataset)
    if task.recursive:
        datasets = Dataset.objects.filter(host=task.host).filter(
            Q(name=task.dataset) | Q(name__startswith=f"{task.dataset}/")
        )
    victims = []
    for dataset in datasets.exclude(name__in=excluded):
        own = Snapshot.objects.filter(dataset=dataset, name__startswith=f"{task.prefix}-")
        own = list(own.order_by(*Snapshot.NEWEST_FIRST))
        for index, snap in enumerate(own):
            too_many = task.keep_count is not None and index >= task.keep_count - (1 if taking_one else 0)
            too_old = task.keep_days is not None and snap.created_at < now - timedelta(days=task.keep_days)
            if (too_many or too_old) and not snap.holds:  # a held snapshot is kept until released
                victims.append(snap)
    return sorted(victims, key=lambda s: (s.createtxg, s.created_at))  # one pool: its txgs order every dataset


def filesystem_names_on(*, host) -> list[str]:
    return (
        list(Dataset.objects.filter(host=host, type=DatasetType.FILESYSTEM).values_list("name", flat=True))
        if host
        else []
    )


def snapshot_tasks_with_preview(*, host) -> list:
    """Each task with what its retention would delete if it ran now (from the inventory)."""
    now = timezone.now()
    tasks = list(SnapshotTask.objects.filter(host=host)) if host else []
    for task in tasks:
        task.preview = retention_victims(task=task, now=now, taking_one=True)
    return tasks


def importable_pools(*, host):
    return ImportablePool.objects.filter(host=host)


def dataset_dependents(*, host, name: str) -> dict:
    """What goes with a dataset when it is destroyed: its children and every snapshot at or below it."""
    tree = Dataset.objects.filter(host=host).filter(Q(name=name) | Q(name__startswith=f"{name}/"))
    children = tree.exclude(name=name)
    return {
        "children": list(children.values_list("name", flat=True)[:50]),
        "child_count": children.count(),
        "snapshots": tree.aggregate(n=Sum("snapshot_count"))["n"] or 0,
    }


def scrub_schedule(*, pool):
    return ScrubSchedule.objects.filter(host=pool.host, pool=pool.name).first()


PARTITION = re.compile(r"(-part|p)?\d{1,3}")


def pool_estimate(*, pool):
    """The rule-of-thumb figures for an existing pool from its data vdevs and its disks' media (None: no vdevs)."""
    vdevs = list(Vdev.objects.filter(pool=pool, role="data").only("id", "parent_id", "type", "path", "size"))
    media = {}
    for disk in Disk.objects.filter(host_id=pool.host_id, pool=pool):
        for path in (disk.path, disk.by_id):
            if path:
                media[path] = disk.media
    children = {}
    for v in vdevs:
        children.setdefault(v.parent_id, []).append(v)

    def leaves(v):
        kids = children.get(v.id)
        return [leaf for kid in kids for leaf in leaves(kid)] if kids else [v]

    def media_of(path: str) -> str:  # a leaf is often a partition: /dev/sda1, /dev/nvme0n1p1, …/by-id/x-part1
        return next((m for p, m in media.items() if path == p or PARTITION.fullmatch(path.removeprefix(p))), "hdd")

    layout = [(v.type, [(leaf.size, media_of(leaf.path)) for leaf in leaves(v)]) for v in children.get(None, [])]
    return estimate(layout, media_speeds()) if layout else None


def pools_all():
    """Every pool Tarn knows, on every host (for /metrics; one host's are pool_list)."""
    return Pool.objects.all()


def pool_states(*, host) -> dict[str, str]:
    """Each of the host's pools' state by name, as the inventory last saw it."""
    return dict(Pool.objects.filter(host=host).values_list("name", "state"))


def device_errors_by_pool(*, host=None) -> dict[int, int]:
    """Read, write and checksum errors of each pool's devices, summed, by pool id."""
    vdevs = Vdev.objects.filter(pool__host=host) if host is not None else Vdev.objects.all()
    totals = vdevs.values("pool_id").annotate(e=Sum("read_errors") + Sum("write_errors") + Sum("checksum_errors"))
    return {row["pool_id"]: row["e"] or 0 for row in totals}


def dataset_counts() -> dict[int, int]:
    """Datasets and volumes per host id."""
    return {row["host_id"]: row["n"] for row in Dataset.objects.values("host_id").annotate(n=Count("id"))}


def snapshot_counts(*, host=None) -> dict[int, int]:
    """Snapshots per host id (one host's, or every host's)."""
    snapshots = Snapshot.objects.filter(dataset__host=host) if host is not None else Snapshot.objects.all()
    return {row["dataset__host_id"]: row["n"] for row in snapshots.values("dataset__host_id").annotate(n=Count("id"))}


def pool_named(*, host_id: int, name: str):
    return Pool.objects.filter(host_id=host_id, name=name).first()


def filesystem(*, host, name: str):
    """The host's filesystem dataset of that name (not a zvol), or None."""
    return Dataset.objects.filter(host=host, name=name, type=DatasetType.FILESYSTEM).first()


def dataset_exists(*, host, name: str) -> bool:
    """Whether the host has a filesystem or zvol of that name (as last read)."""
    return Dataset.objects.filter(host=host, name=name).exists()


def snapshot_names(*, host, dataset: str) -> list[str]:
    """The names (after the @) of a dataset's snapshots, oldest first (by transaction group: see Snapshot)."""
    return list(
        Snapshot.objects.filter(dataset__host=host, dataset__name=dataset)
        .order_by(*Snapshot.OLDEST_FIRST)
        .values_list("name", flat=True)
    )


def is_mounted(dataset) -> bool:
    """Tarn's one meaning of a mounted filesystem: its mountpoint is a path (not none, legacy or a zvol's '-') and
    the inventory did not read it as unmounted (a locked dataset, or one unmounted by hand)."""
    unmounted = (dataset.properties.get("mounted") or {}).get("value") == "no"
    return dataset.type == DatasetType.FILESYSTEM and dataset.mountpoint.startswith("/") and not unmounted


def mounted_filesystem(*, host, name: str):
    """The host's filesystem of that name if it is mounted (see is_mounted), else None."""
    found = filesystem(host=host, name=name)
    return found if found is not None and is_mounted(found) else None


def mounted_filesystem_names(*, host, limit: int = 500) -> list[str]:
    return [name for name, _ in mounted_filesystem_mounts(host=host, limit=limit)]


def mounted_filesystem_mounts(*, host, limit: int = 500) -> list[tuple[str, str]]:
    """(name, mount point) of the host's filesystems mounted on a path, by name."""
    mounted = Dataset.objects.filter(host=host, type=DatasetType.FILESYSTEM, mountpoint__startswith="/")
    return list(mounted.order_by("name").values_list("name", "mountpoint")[:limit])


def snapshot_counts_of(*, host, names) -> dict[str, int]:
    """Each named dataset's snapshot count as last read, by name."""
    return dict(Dataset.objects.filter(host=host, name__in=set(names)).values_list("name", "snapshot_count"))


def cache_bytes(*, host, pool: str) -> int:
    """The size of a pool's cache (L2ARC) devices as last read: 0 where it has none."""
    leaves = Vdev.objects.filter(pool__host=host, pool__name=pool, role=VdevRole.CACHE, children__isnull=True)
    return sum(leaves.values_list("size", flat=True))


def encrypted_datasets(*, host=None, hosts=None):
    """The encrypted datasets and zvols of a host (or of several: one query), as the inventory last read them."""
    where = {"host": host} if hosts is None else {"host__in": hosts}
    return (
        Dataset.objects.filter(properties__encryption__value__isnull=False, **where)
        .exclude(properties__encryption__value__in=["off", "", "-"])
        .order_by("host_id", "name")
    )


def encryption_roots(*, host) -> list:
    """The datasets whose own key unlocks them (and the datasets below that inherit it), name order."""
    return [d for d in encrypted_datasets(host=host) if d.encryption.get("root") == d.name]


def encryption_members(*, host) -> dict[str, list]:
    """{encryption root: the datasets it unlocks, itself first}."""
    return encryption_members_by_host(hosts=[host]).get(host.pk, {})


def encryption_members_by_host(*, hosts) -> dict[int, dict[str, list]]:
    """{host id: {encryption root: the datasets it unlocks, itself first}} for several hosts in one query."""
    members: dict[int, dict[str, list]] = {}
    for d in encrypted_datasets(hosts=hosts):
        members.setdefault(d.host_id, {}).setdefault(d.encryption.get("root", d.name), []).append(d)
    return members


def datasets_named(*, host_ids: list[int], names: set[str]) -> dict[tuple[int, str], object]:
    """{(host id, name): dataset} for these names on these hosts (one query)."""
    rows = Dataset.objects.filter(host_id__in=host_ids, name__in=names)
    return {(d.host_id, d.name): d for d in rows}


def capacity_now(*, host) -> list[tuple[str, str, int, int, object]]:
    """What each pool and dataset of the host uses as last read: (pool, dataset or "" for the pool itself, used,
    total, observed_at). A pool: allocated of size; a dataset: used of used + available (its quota or the pool's
    free space is what it can reach). Snapshots are in their dataset's used."""
    rows = [(p.name, "", p.allocated, p.size, p.observed_at) for p in Pool.objects.filter(host=host)]
    datasets = Dataset.objects.filter(host=host, type__in=[DatasetType.FILESYSTEM, DatasetType.VOLUME])
    for pool, name, used, available, at in datasets.values_list(
        "pool__name", "name", "used", "available", "observed_at"
    ):
        rows.append((pool, name, used, used + available, at))
    return rows


def snapshot_expiries(*, host, now, until) -> list[tuple[str, object, int]]:
    """What the host's snapshot schedules will destroy from now to until: (dataset, when, the snapshot's used bytes:
    what it alone holds, so at least what goes). keep_days: at its creation plus those days; keep_count: each new
    snapshot pushes the oldest of its own out, one every every_minutes (those past the count already, now). Held
    snapshots stay. One query per schedule and dataset it covers."""
    found = []
    for task in SnapshotTask.objects.filter(host=host, enabled=True):
        excluded = {line.strip() for line in task.exclude.splitlines() if line.strip()}
        datasets = Dataset.objects.filter(host=host, name=task.dataset)
        if task.recursive:
            datasets = Dataset.objects.filter(host=host).filter(
                Q(name=task.dataset) | Q(name__startswith=f"{task.dataset}/")
            )
        for dataset in datasets.exclude(name__in=excluded).only("pk", "name"):
            own = Snapshot.objects.filter(dataset=dataset, name__startswith=f"{task.prefix}-")
            rows = list(own.order_by(*Snapshot.NEWEST_FIRST).values_list("created_at", "used", "holds"))
            every = timedelta(minutes=task.every_minutes)
            for index, (created, used, holds) in enumerate(rows):
                if holds:  # kept until released (it still counts among the kept, as the retention counts it)
                    continue
                when = None
                if task.keep_days is not None:
                    when = max(created + timedelta(days=task.keep_days), now)
                if task.keep_count is not None:
                    pushed = now + every * max(task.keep_count - index, 0)  # past the count: at the next run
                    when = min(when, pushed) if when else pushed
                if when is not None and when <= until:
                    found.append((dataset.name, when, used))
    return found


def snapshots_of(*, dataset):
    """A dataset's snapshots, newest first (by the pool's transaction group)."""
    return Snapshot.objects.filter(dataset=dataset).order_by(*Snapshot.NEWEST_FIRST)


def snapshot_of(*, dataset, name: str):
    """A dataset's snapshot of that name as last read, or None."""
    return Snapshot.objects.filter(dataset=dataset, name=name).first()


def snapshots_unheld(*, host, names: list[str]) -> list[str]:
    """Of these full snapshot names (dataset@name), those the host has as last read and not held, oldest first."""
    wanted = {tuple(n.split("@", 1)) for n in names if "@" in n}
    if not wanted:
        return []
    rows = Snapshot.objects.filter(host=host, holds=0, name__in={n for _, n in wanted})
    found = rows.order_by("created_at").values_list("dataset__name", "name")
    return [f"{d}@{n}" for d, n in found if (d, n) in wanted]


def dataset_named(*, host, name: str):
    """A dataset of the host's inventory by its name, or None."""
    return Dataset.objects.filter(host=host, name=name).first()


def volume_names(*, host) -> list[str]:
    """The host's zvols, by name."""
    return list(
        Dataset.objects.filter(host=host, type=DatasetType.VOLUME).order_by("name").values_list("name", flat=True)
    )


def locked_volumes(*, host) -> set[str]:
    """The host's zvols whose key is not loaded, as the inventory last read them."""
    return {
        d.name
        for d in encrypted_datasets(host=host)
        if d.type == DatasetType.VOLUME and d.encryption.get("key") == "unavailable"
    }


# --- the fleet page's columns (appliance.fleet) ---------------------------------------------------------------
FULL_WARN, FULL_BAD = 80, 90  # % allocated


def fleet_pools(*, hosts) -> dict:
    """Per host: its pools and the worst state among them (one query)."""
    by_host: dict[int, list] = {}
    for host_id, name, state, errors in Pool.objects.filter(host__in=hosts).values_list(
        "host_id", "name", "state", "error_count"
    ):
        by_host.setdefault(host_id, []).append((name, state, errors))
    cells = {}
    for host_id, pools in by_host.items():
        sick = [f"{n} {s}" for n, s, e in pools if s != "ONLINE" or e]
        text = f"{len(pools)} pool{'s' if len(pools) != 1 else ''}" + (f", {', '.join(sick)}" if sick else ", online")
        cells[host_id] = Cell(text, -len(sick), BAD if sick else OK)
    return cells


def fleet_capacity(*, hosts) -> dict:
    """Per host: its fullest pool (% allocated), warn from 80 %, bad from 90 % (one query)."""
    fullest: dict[int, tuple[int, str]] = {}
    for host_id, name, capacity in Pool.objects.filter(host__in=hosts).values_list("host_id", "name", "capacity"):
        if host_id not in fullest or capacity > fullest[host_id][0]:
            fullest[host_id] = (capacity, name)
    return {
        host_id: Cell(
            f"{pct} % ({name})", -pct, BAD if pct >= FULL_BAD else WARN if pct >= FULL_WARN else OK
        )  # fmt: skip
        for host_id, (pct, name) in fullest.items()
    }
