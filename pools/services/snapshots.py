"""Snapshots: take, roll back, destroy (several at once), clone, hold and release."""

from django.core.exceptions import ValidationError

from appliance.checks import checked, confirmed
from appliance.choices import Role
from appliance.models import Operation
from hostlib import zfs
from pools.models import Snapshot
from pools.selectors import snapshot_newer
from pools.services.commands import command_start, dataset_row, new_dataset_name, snapshot_row
from pools.services.inventory import Scope


def snapshot_create_start(*, host, user, dataset: str, name: str, recursive: bool = False) -> Operation:
    dataset_row(host, dataset)
    full = f"{dataset}@{name}"
    argv = checked(lambda: zfs.snapshot_argv([full], recursive=recursive))
    if Snapshot.objects.filter(dataset__host=host, dataset__name=dataset, name=name).exists():
        raise ValidationError({"name": f"{full} exists already."})
    return command_start(
        host=host,
        user=user,
        kind="pools.snapshot_create",
        target=f"dataset:{dataset}",
        argvs=[argv],
        done=f"Took {full}",
        scope=Scope(trees=[dataset]) if recursive else Scope(datasets=[dataset]),
    )


def snapshot_rollback_start(*, host, user, snapshot: str, destroy_newer: bool, confirm: str = "") -> Operation:
    """Past newer snapshots (which the rollback destroys) only for an admin who typed the snapshot's name."""
    target = snapshot_row(host, snapshot)
    dataset_name, snap = target.dataset.name, target.name
    newer = snapshot_newer(snapshot=target).count()
    drops = f"destroys {newer} newer snapshot{'s' if newer > 1 else ''}"
    if newer and not destroy_newer:
        raise ValidationError({"destroy_newer": f"Rolling back to {snapshot} {drops}; confirm to go on."})
    if newer and not (user and user.has_role(Role.ADMIN)):
        raise ValidationError({"destroy_newer": f"Rolling back to {snapshot} {drops}: only an admin may."})
    if newer:
        confirmed(confirm, snap, f"Rolling back {drops}: type the snapshot's name ({snap}) to go on.")
    argv = checked(lambda: zfs.rollback_argv(snapshot, destroy_newer=bool(newer)))
    return command_start(
        host=host,
        user=user,
        kind="pools.snapshot_rollback",
        target=f"dataset:{dataset_name}",
        argvs=[argv],
        done=f"{dataset_name} is back at {snap}",
        scope=Scope(datasets=[dataset_name]),
    )


def snapshot_destroy_start(*, host, user, snapshots: list[str]) -> Operation:
    if not snapshots:
        raise ValidationError({"snapshots": "Choose at least one snapshot."})
    for full in snapshots:
        row = snapshot_row(host, full, "snapshots")
        if row.holds:
            raise ValidationError({"snapshots": f"{full} is held ({row.holds}): release it first."})
    argvs = [checked(lambda f=full: zfs.destroy_argv(f)) for full in snapshots]
    datasets = sorted({s.split("@")[0] for s in snapshots})
    return command_start(
        host=host,
        user=user,
        kind="pools.snapshot_destroy",
        target=f"dataset:{','.join(datasets)}"[:250],
        argvs=argvs,
        done=f"Destroyed {len(snapshots)} snapshot{'s' if len(snapshots) > 1 else ''}",
        scope=Scope(datasets=datasets),
    )


def snapshot_clone_start(*, host, user, snapshot: str, target: str, readonly: bool = False) -> Operation:
    snapshot_row(host, snapshot)
    argv = checked(lambda: zfs.clone_argv(snapshot, target, readonly=readonly), "target")
    new_dataset_name(host, target, "target")
    return command_start(
        host=host,
        user=user,
        kind="pools.snapshot_clone",
        target=f"dataset:{target}",
        argvs=[argv],
        done=f"Cloned {snapshot} to {target}",
        scope=Scope(trees=[target], datasets=[snapshot.split("@")[0]]),
    )


def snapshot_hold_start(*, host, user, snapshot: str, tag: str, release: bool = False) -> Operation:
    row = snapshot_row(host, snapshot)
    dataset_name = row.dataset.name
    if release and not row.holds:
        raise ValidationError({"tag": f"{snapshot} has no holds."})
    argv = checked(lambda: zfs.hold_argv(snapshot, tag, release=release), "tag")
    return command_start(
        host=host,
        user=user,
        kind="pools.snapshot_release" if release else "pools.snapshot_hold",
        target=f"dataset:{dataset_name}",
        argvs=[argv],
        done=f"{'Released' if release else 'Held'} {snapshot} ({tag})",
        scope=Scope(datasets=[dataset_name]),
    )
