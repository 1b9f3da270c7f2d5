"""The inventory on the lab's real OpenZFS: ids survive refreshes and operations (a rename keeps its row), an
operation re-reads only what it touched, and the beat's periodic refresh runs."""

import pytest
from django.conf import settings

from appliance.models import Operation
from appliance.operations import operation_execute
from pools import services
from pools.models import Dataset, Disk, Pool, Snapshot, Vdev
from pools.services import inventory
from tarn.celery import app
from tests.support.inline import run_when_queued
from tests.test_beat import MODULES  # noqa: F401 - every tasks module imported: the beat's tasks are registered

pytestmark = pytest.mark.lab
D = "/dev/disk/by-id/virtio-zfsdisk{}".format


@pytest.fixture
def tank(guest, lab_host):
    guest.enter(
        "inventory-tank",
        lambda: guest.sh(
            f"zpool create -f tank mirror {D(1)} {D(2)} && zfs create tank/a && zfs create tank/a/x"
            " && zfs create tank/b && zfs snapshot -r tank/a@one && zfs snapshot tank/b@one"
        ),
    )
    services.inventory_refresh(host=lab_host)
    return lab_host


def ids(host) -> dict:
    return {
        "pool": set(Pool.objects.filter(host=host).values_list("name", "pk")),
        "vdevs": set(Vdev.objects.filter(pool__host=host).values_list("name", "pk")),
        "disks": set(Disk.objects.filter(host=host).values_list("name", "pk")),
        "datasets": set(Dataset.objects.filter(host=host).values_list("name", "pk")),
        "snapshots": set(Snapshot.objects.filter(host=host).values_list("dataset__name", "name", "pk")),
    }


def run(start, captured, **kwargs):
    with captured(execute=False):
        op = start(user=None, **kwargs)
    operation_execute(op.pk)
    op.refresh_from_db()
    assert op.status == "succeeded", op.message
    return op


def test_ids_survive_a_refresh_and_an_unrelated_operation(tank, django_capture_on_commit_callbacks):
    before = ids(tank)
    assert len(before["datasets"]) == 4 and len(before["snapshots"]) == 3 and len(before["vdevs"]) == 3
    services.inventory_refresh(host=tank)
    assert ids(tank) == before
    run(services.snapshot_create_start, django_capture_on_commit_callbacks, host=tank, dataset="tank/b", name="two")
    after = ids(tank)
    assert {k: v for k, v in after.items() if k != "snapshots"} == {k: v for k, v in before.items() if k != "snapshots"}
    assert before["snapshots"] < after["snapshots"] and len(after["snapshots"]) == 4


def test_a_renamed_dataset_keeps_its_row_its_childrens_and_their_snapshots(tank, django_capture_on_commit_callbacks):
    a, x = Dataset.objects.get(name="tank/a"), Dataset.objects.get(name="tank/a/x")
    snap = Snapshot.objects.get(dataset=x, name="one")
    run(services.dataset_rename_start, django_capture_on_commit_callbacks, host=tank, name="tank/a", new_name="tank/c")
    assert Dataset.objects.get(pk=a.pk).name == "tank/c" and Dataset.objects.get(pk=x.pk).name == "tank/c/x"
    assert Snapshot.objects.get(pk=snap.pk).dataset_id == x.pk
    assert not Dataset.objects.filter(name__startswith="tank/a").exists()


def test_the_second_of_two_patches_on_the_same_id_succeeds(tank, admin_client, django_capture_on_commit_callbacks):
    dataset = Dataset.objects.get(name="tank/b")
    for props in ({"compression": "zstd"}, {"atime": "off"}):
        with django_capture_on_commit_callbacks(execute=False):
            response = admin_client.patch(
                f"/api/v1/datasets/{dataset.pk}/", {"properties": props}, content_type="application/json"
            )
        assert response.status_code == 202, response.content
        operation_execute(response.json()["id"])
        assert Operation.objects.get(pk=response.json()["id"]).status == "succeeded"
    props = Dataset.objects.get(pk=dataset.pk).properties
    assert (props["compression"]["value"], props["atime"]["value"]) == ("zstd", "off")


class Spy:
    """The real transport, with every argv it ran noted (to see what a refresh read)."""

    def __init__(self, transport):
        self.transport, self.argvs = transport, []

    def run(self, argv, **kwargs):
        self.argvs.append(list(argv))
        return self.transport.run(argv, **kwargs)


def test_an_operation_reads_only_the_pools_status_and_the_dataset_it_touched(
    tank, monkeypatch, django_capture_on_commit_callbacks
):
    spies = []
    real = inventory.transport_for
    monkeypatch.setattr(inventory, "transport_for", lambda *a, **k: spies.append(Spy(real(*a, **k))) or spies[-1])
    run(services.snapshot_create_start, django_capture_on_commit_callbacks, host=tank, dataset="tank/b", name="two")
    listings = [argv for argv in spies[0].argvs if argv[:2] == ["zfs", "list"]]
    assert [argv[-1] for argv in listings] == ["tank/b", "tank/b"] and all("-r" not in argv for argv in listings)
    assert Snapshot.objects.filter(dataset__name="tank/b", name="two").exists()


def test_a_destroyed_dataset_leaves_the_inventory_and_the_rest_keeps_its_ids(tank, django_capture_on_commit_callbacks):
    before = ids(tank)
    run(services.dataset_destroy_start, django_capture_on_commit_callbacks, host=tank, name="tank/a", confirm="tank/a")
    after = ids(tank)
    assert after["datasets"] == {(n, pk) for n, pk in before["datasets"] if not n.startswith("tank/a")}
    assert after["snapshots"] == {s for s in before["snapshots"] if s[0] == "tank/b"}


def test_the_beat_entries_run_against_the_lab_and_the_periodic_refresh_reads_it(
    guest, lab_host, monkeypatch, django_capture_on_commit_callbacks
):
    """A pool made outside Tarn appears after one round of beat, whose queued refresh runs here."""
    guest.sh(f"zpool create -f outside {D(3)}")
    monkeypatch.setattr(app, "send_task", run_when_queued)
    for entry in settings.CELERY_BEAT_SCHEDULE.values():
        with django_capture_on_commit_callbacks(execute=True):
            assert app.tasks[entry["task"]].apply().successful(), entry["task"]
    refresh = Operation.objects.get(kind="pools.refresh", host=lab_host)
    assert refresh.status == "succeeded" and refresh.user is None
    assert Pool.objects.filter(host=lab_host, name="outside").exists()
    assert Disk.objects.get(host=lab_host, by_id=D(3)).pool.name == "outside"
