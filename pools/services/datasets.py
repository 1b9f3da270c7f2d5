"""Datasets and zvols: create, change and reset properties, rename, destroy."""

from django.core.exceptions import ValidationError

from appliance.checks import checked, confirmed
from appliance.models import Operation
from hostlib import names, zfs
from pools.dependents import dataset_users
from pools.services.commands import command_start, dataset_row, new_dataset_name, refuse_if_in_use
from pools.services.inventory import Scope


def _parent(name: str) -> list[str]:
    return [name.rsplit("/", 1)[0]] if "/" in name else []


def dataset_create_start(*, host, user, name: str, props: dict, volume_size: str | None = None) -> Operation:
    argv = checked(lambda: zfs.create_argv(name, props, volume_size=volume_size))
    new_dataset_name(host, name, "name")
    kind = "zvol" if volume_size else "dataset"
    return command_start(
        host=host,
        user=user,
        kind=f"pools.{kind}_create",
        target=f"dataset:{name}",
        argvs=[argv],
        done=f"Created {name}",
        scope=Scope(trees=[name], datasets=_parent(name)),
    )


def dataset_set_start(*, host, user, name: str, props: dict) -> Operation:
    dataset = dataset_row(host, name)
    argv = checked(lambda: zfs.set_argv(name, props))
    if "volsize" in props:
        _refuse_shrinking_in_use(host, dataset, props["volsize"])
    return command_start(
        host=host,
        user=user,
        kind="pools.dataset_set",
        target=f"dataset:{name}",
        argvs=[argv],
        done=f"Set {', '.join(props)} on {name}",
        scope=Scope(trees=[name]),
    )


def _refuse_shrinking_in_use(host, dataset, volsize) -> None:
    """A zvol something serves (an iSCSI LUN) is not made smaller under it: the blocks past the new end are the
    initiator's file system. Growing it is fine."""
    try:
        new, now = names.parse_size(volsize), int(dataset.properties.get("volsize", {}).get("value") or 0)
    except (ValueError, TypeError):
        return  # zfs.set_argv checked the value; an unknown current size is not refused here
    users = dataset_users(host=host, dataset=dataset.name)
    if users and new < now:
        raise ValidationError({"volsize": f"{dataset.name} is in use by {', '.join(users[:5])}: remove that first "
                                          "to shrink it (growing it is fine)."})  # fmt: skip


def dataset_inherit_start(*, host, user, name: str, key: str) -> Operation:
    dataset_row(host, name)
    argv = checked(lambda: zfs.inherit_argv(name, key))
    return command_start(
        host=host,
        user=user,
        kind="pools.dataset_inherit",
        target=f"dataset:{name}",
        argvs=[argv],
        done=f"{key} on {name} is inherited again",
        scope=Scope(trees=[name]),
    )


def dataset_destroy_start(*, host, user, name: str, confirm: str) -> Operation:
    dataset = dataset_row(host, name)
    confirmed(confirm, name, f"Type the dataset's name ({name}) to destroy it.")
    if dataset.depth == 0:
        raise ValidationError({"name": "That is the pool's root dataset: destroy the pool instead."})
    refuse_if_in_use(host, name)
    argv = checked(lambda: zfs.destroy_argv(name, recursive=True))
    return command_start(
        host=host,
        user=user,
        kind="pools.dataset_destroy",
        target=f"dataset:{name}",
        argvs=[argv],
        done=f"Destroyed {name}",
        scope=Scope(trees=[name], datasets=_parent(name)),
    )


def dataset_rename_start(*, host, user, name: str, new_name: str) -> Operation:
    """The rows of the tree are renamed in place after `zfs rename`, so the dataset keeps its id and URL."""
    dataset_row(host, name)
    argv = checked(lambda: zfs.rename_argv(name, new_name), "new_name")
    new_dataset_name(host, new_name, "new_name")
    return command_start(
        host=host,
        user=user,
        kind="pools.dataset_rename",
        target=f"dataset:{name}",
        argvs=[argv],
        done=f"{name} is now {new_name}",
        scope=Scope(trees=[new_name], datasets=_parent(name) + _parent(new_name)),
        renamed=[name, new_name],
    )
