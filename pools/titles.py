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
        "pools.create": Title("Create pool {name}", "pool-list", back_label="Back to Pools"),
        "pools.create_encrypted": Title("Create encrypted pool {name}", "pool-list", back_label="Back to Pools"),
        "pools.destroy": _pool("Destroy pool {pool}"),
        "pools.export": _pool("Export pool {pool}"),
        "pools.import_scan": Title("Look for pools to import", "pool-list", back_label="Back to Pools"),
        "pools.import": Title("Import pool {name}", "pool-list", back_label="Back to Pools"),
        "pools.add": _pool("Add disks to {pool}"),
        "pools.scrub_start": _pool("Scrub {pool}"),
        "pools.scrub_pause": _pool("Pause the scrub of {pool}"),
        "pools.scrub_stop": _pool("Stop the scrub of {pool}"),
        "pools.trim_start": _pool("TRIM {pool}"),
        "pools.trim_suspend": _pool("Suspend the TRIM of {pool}"),
        "pools.trim_cancel": _pool("Cancel the TRIM of {pool}"),
        "pools.offline": _pool("Take a disk of {pool} offline"),
        "pools.online": _pool("Bring a disk of {pool} back online"),
        "pools.clear": _pool("Clear the errors of {pool}"),
        "pools.replace": _pool("Replace a disk of {pool}"),
        "pools.attach": _pool("Attach a disk to {pool}"),
        "pools.detach": _pool("Detach a disk from {pool}"),
        "pools.refresh": Title("Read pools, disks, datasets and snapshots", "pool-list", back_label="Back to Pools"),
        "pools.dataset_create": _dataset("Create dataset {object}"),
        "pools.zvol_create": _dataset("Create zvol {object}"),
        "pools.dataset_set": _dataset("Change properties of {object}"),
        "pools.dataset_inherit": _dataset("Inherit a property again on {object}"),
        "pools.dataset_destroy": _dataset("Destroy {object}"),
        "pools.dataset_rename": _dataset("Rename {object}"),
        "pools.snapshot_create": _dataset("Take a snapshot of {object}"),
        "pools.snapshot_rollback": _dataset("Roll {object} back to a snapshot"),
        "pools.snapshot_destroy": _dataset("Destroy snapshots of {object}"),
        "pools.snapshot_clone": _dataset("Clone a snapshot to {object}"),
        "pools.snapshot_hold": _dataset("Hold a snapshot of {object}"),
        "pools.snapshot_release": _dataset("Release a snapshot of {object}"),
        "pools.snapshot_task": Title(
            "Take and prune scheduled snapshots", "snapshot-task-list", back_label="Back to schedules"
        ),
    }
)
