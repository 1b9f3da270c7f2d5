"""Storage commands: a service checks a change against the inventory and builds its exact argv; the worker runs
the argvs on the host and refreshes only what they touched (the operation's Scope)."""

from django.core.exceptions import ValidationError

from appliance.models import Host, Operation
from appliance.operations import Tracker, operation_runner, operation_start
from pools.choices import DatasetType
from pools.dependents import dataset_users
from pools.models import Dataset, Pool, Snapshot
from pools.services.inventory import Scope, dataset_renamed, inventory_refresh


def command_start(
    *, host: Host, user, kind: str, target: str, argvs: list[list[str]], done: str, scope: Scope, renamed=None
) -> Operation:
    """renamed: (old, new) when the argvs rename a dataset, so its rows (and ids) follow before the refresh."""
    return operation_start(
        kind=kind,
        runner="pools.command",
        subject=target,
        host=host,
        user=user,
        params={"argvs": argvs, "done": done, "scope": scope.as_params(), **({"renamed": renamed} if renamed else {})},
    )


@operation_runner("pools.command", lock="")
def storage_command_run(tracker: Tracker) -> None:
    op = tracker.op
    t = tracker.transport()
    argvs = op.params["argvs"]
    for i, argv in enumerate(argvs):
        tracker.progress(int(80 * i / len(argvs)), " ".join(argv[:3]) + " …")
        t.run(argv, timeout=600, mutating=True)
    if op.params.get("renamed"):
        old, new = op.params["renamed"]
        dataset_renamed(host=op.host, old=old, new=new)
    tracker.progress(85, "Reading what changed")
    inventory_refresh(host=op.host, operation=op, scope=Scope.of(op.params.get("scope")))
    tracker.progress(100, op.params["done"])


def require_pool(host, name: str, field: str = "pool") -> None:
    if not Pool.objects.filter(host=host, name=name).exists():
        raise ValidationError({field: f"{host.name} has no pool named {name}."})


def snapshot_row(host, full: str, field: str = "snapshot") -> Snapshot:
    """dataset@name from the inventory, or a field error."""
    dataset_name, _, snap = full.partition("@")
    row = Snapshot.objects.filter(host=host, dataset__name=dataset_name, name=snap).select_related("dataset").first()
    if row is None:
        raise ValidationError({field: f"No snapshot {full} on {host.name}."})
    return row


def dataset_row(host, name) -> Dataset:
    dataset = Dataset.objects.filter(host=host, name=name).first()
    if dataset is None:
        raise ValidationError({"name": f"{host.name} has no dataset {name} (refresh the inventory?)."})
    return dataset


def new_dataset_name(host, name: str, field: str) -> None:
    """A dataset about to appear (create, rename, clone): not taken, and its parent is a filesystem."""
    if Dataset.objects.filter(host=host, name=name).exists():
        raise ValidationError({field: f"{name} exists already."})
    parent = name.rsplit("/", 1)[0]
    if not Dataset.objects.filter(host=host, name=parent, type=DatasetType.FILESYSTEM).exists():
        raise ValidationError({field: f"The parent {parent} is not a filesystem on {host.name}."})


def refuse_if_in_use(host, dataset: str) -> None:
    """A pool or dataset that clients (shares, exports, later benchmarks) use is not destroyed or exported."""
    users = dataset_users(host=host, dataset=dataset)
    if users:
        raise ValidationError({"name": f"{dataset} is in use by {', '.join(users[:5])}: remove those first."})
