"""What the storage operations are called on their pages, and the pool or dataset page each came from."""

from django.urls import reverse

from appliance.titles import Title, operation_titles
from pools.models import Dataset, Pool


def _dataset_page(words) -> tuple[str, str]:
    """The dataset's page (one not made or gone: its pool's), by the operation's dataset name."""
    name = words["object"].split(",")[0]
    row = Dataset.objects.filter(host__name=words["host"], name=name).first()
    return (f"Back to {row.name}", row.get_absolute_url()) if row else _pool_page(words, name.split("/")[0])


def _pool_page(words, name: str = "") -> tuple[str, str]:
    name = name or words["object"].removesuffix(":scrub").removesuffix(":trim")
    row = Pool.objects.filter(host__name=words["host"], name=name).first()
    return (f"Back to {row.name}", row.get_absolute_url()) if row else ("Back to Pools", reverse("pool-list"))


def _pool(text: str) -> Title:
    return Title(lambda w: text.format(pool=w["object"].removesuffix(":scrub").removesuffix(":trim")), _pool_page)


def _dataset(text: str) -> Title:
    return Title(text, _dataset_page)


operation_titles(
    {
        "pool.create": Title("Create pool {name}", "pool-list", back_label="Back to Pools"),
        "pool.create_encrypted": Title("Create encrypted pool {name}", "pool-list", back_label="Back to Pools"),
        "pool.destroy": _pool("Destroy pool {pool}"),
        "pool.export": _pool("Export pool {pool}"),
        "pool.import.scan": Title("Look for pools to import", "pool-list", back_label="Back to Pools"),
        "pool.import": Title("Import pool {name}", "pool-list", back_label="Back to Pools"),
        "pool.add": _pool("Add disks to {pool}"),
        "pool.scrub.start": _pool("Scrub {pool}"),
        "pool.scrub.pause": _pool("Pause the scrub of {pool}"),
        "pool.scrub.stop": _pool("Stop the scrub of {pool}"),
        "pool.trim.start": _pool("TRIM {pool}"),
        "pool.trim.suspend": _pool("Suspend the TRIM of {pool}"),
        "pool.trim.cancel": _pool("Cancel the TRIM of {pool}"),
        "pool.offline": _pool("Take a disk of {pool} offline"),
        "pool.online": _pool("Bring a disk of {pool} back online"),
        "pool.clear": _pool("Clear the errors of {pool}"),
        "pool.replace": _pool("Replace a disk of {pool}"),
        "pool.attach": _pool("Attach a disk to {pool}"),
        "pool.detach": _pool("Detach a disk from {pool}"),
        "inventory.refresh": Title(
            "Read pools, disks, datasets and snapshots", "pool-list", back_label="Back to Pools"
        ),
        "dataset.create": _dataset("Create dataset {object}"),
        "zvol.create": _dataset("Create zvol {object}"),
        "dataset.set": _dataset("Change properties of {object}"),
        "dataset.inherit": _dataset("Inherit a property again on {object}"),
        "dataset.destroy": _dataset("Destroy {object}"),
        "dataset.rename": _dataset("Rename {object}"),
        "snapshot.create": _dataset("Take a snapshot of {object}"),
        "snapshot.rollback": _dataset("Roll {object} back to a snapshot"),
        "snapshot.destroy": _dataset("Destroy snapshots of {object}"),
        "snapshot.clone": _dataset("Clone a snapshot to {object}"),
        "snapshot.hold": _dataset("Hold a snapshot of {object}"),
        "snapshot.release": _dataset("Release a snapshot of {object}"),
        "snapshot.task": Title(
            "Take and prune scheduled snapshots", "snapshot-task-list", back_label="Back to schedules"
        ),
    }
)
