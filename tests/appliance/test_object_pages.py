"""An object's page shows its own host: opened while the switcher is on another host it renders (no 404) and the
switcher follows it; an action posted from it acts on that host; roles stay as they were; an htmx poll never moves
the switcher."""

import pytest
from django.utils import timezone

from appliance.models import Host, Operation
from benchmarks.models import Run, Schedule, Suite
from pools.models import Dataset, Pool
from shares.models import NfsExport, SmbShare
from tuning.models import ChangeSet


@pytest.fixture
def lab(db):
    """A second host, never reached: its pages read only the inventory rows made here."""
    return Host.objects.create(name="lab", transport="ssh", address="192.0.2.7")


@pytest.fixture
def lab_pages(lab):
    """Every kind of object page, each for an object on lab."""
    now = timezone.now()
    pool = Pool.objects.create(host=lab, name="tank", guid="7", state="ONLINE", observed_at=now)
    dataset = Dataset.objects.create(
        host=lab, pool=pool, name="tank/media", type="filesystem", depth=1, mountpoint="/tank/media", observed_at=now
    )
    smb = SmbShare.objects.create(host=lab, name="media", dataset="tank/media", path="/tank/media")
    nfs = NfsExport.objects.create(host=lab, dataset="tank/media", path="/tank/media", clients="10.0.0.0/24")
    run = Run.objects.create(host=lab, profile="seq-write-1", title="Sequential write 1M", target="tank/media")
    suite = Suite.objects.create(host=lab, title="sync sweep", target="tank/media")
    schedule = Schedule.objects.create(host=lab, name="nightly", profiles=["seq-write-1"], target="tank/media")
    change = ChangeSet.objects.create(host=lab, kind="tunable", title="vm.swappiness = 10", status="applied")
    op = Operation.objects.create(kind="pools.scrub_start", target="pool:tank:scrub", host=lab, status="succeeded")
    return {
        "pool": f"/pools/{pool.pk}/",
        "dataset": f"/pools/datasets/{dataset.pk}/",
        "smb share": f"/shares/smb/{smb.pk}/",
        "nfs export": f"/shares/nfs/{nfs.pk}/",
        "benchmark run": f"/benchmarks/runs/{run.pk}/",
        "benchmark suite": f"/benchmarks/suites/{suite.pk}/",
        "benchmark schedule": f"/benchmarks/schedules/{schedule.pk}/",
        "tuning change set": f"/tuning/changes/{change.pk}/",
        "operation": f"/operations/{op.pk}/",
    }


def on(client, host):
    response = client.post("/hosts/switch/", {"host": host.pk, "next": "/"})
    assert response.status_code == 302 and client.session["host_id"] == host.pk


KINDS = [
    "pool",
    "dataset",
    "smb share",
    "nfs export",
    "benchmark run",
    "benchmark suite",
    "benchmark schedule",
    "tuning change set",
    "operation",
]


@pytest.mark.parametrize("kind", KINDS)
def test_an_object_page_of_another_host_renders_and_the_switcher_follows_it(
    viewer_client, local_host, lab, lab_pages, kind
):
    on(viewer_client, local_host)
    response = viewer_client.get(lab_pages[kind])
    assert response.status_code == 200, (kind, response.status_code)
    assert viewer_client.session["host_id"] == lab.pk
    assert f'<option value="{lab.pk}" selected>lab</option>' in response.content.decode()  # the header says lab


def test_the_pool_and_dataset_pages_name_their_host(viewer_client, local_host, lab_pages):
    on(viewer_client, local_host)
    assert "on lab</small>" in viewer_client.get(lab_pages["pool"]).content.decode()
    assert "on\n  lab:" in viewer_client.get(lab_pages["dataset"]).content.decode()


def test_after_an_object_page_the_lists_are_that_hosts(viewer_client, local_host, lab_pages):
    on(viewer_client, local_host)
    viewer_client.get(lab_pages["pool"])
    pools = viewer_client.get("/pools/").content.decode()
    assert "Pools <small" in pools and "on lab</small>" in pools and lab_pages["pool"] in pools


def test_a_missing_object_is_still_a_404_and_the_switcher_stays(viewer_client, local_host, lab_pages):
    on(viewer_client, local_host)
    assert viewer_client.get("/pools/999999/").status_code == 404
    assert viewer_client.get("/benchmarks/runs/999999/").status_code == 404
    assert viewer_client.session["host_id"] == local_host.pk


@pytest.mark.parametrize("kind", ["operation", "benchmark run", "benchmark suite", "tuning change set"])
def test_an_htmx_poll_of_another_hosts_object_does_not_move_the_switcher(viewer_client, local_host, lab_pages, kind):
    """A page left polling in a background tab must not change the host under the tab the admin is using."""
    on(viewer_client, local_host)
    response = viewer_client.get(lab_pages[kind], headers={"HX-Request": "true"})
    assert response.status_code in (200, 286)
    assert viewer_client.session["host_id"] == local_host.pk


def test_an_action_from_another_hosts_pool_page_acts_on_that_host(
    operator_client, local_host, lab, lab_pages, django_capture_on_commit_callbacks
):
    """local has a pool of the same name: the scrub must go to lab's, whatever the switcher said."""
    Pool.objects.create(host=local_host, name="tank", guid="1", state="ONLINE", observed_at=timezone.now())
    on(operator_client, local_host)
    with django_capture_on_commit_callbacks(execute=False):
        response = operator_client.post(f"{lab_pages['pool']}scrub/", {"action": "start"})
    op = Operation.objects.get(kind="pools.scrub_start", status="queued")
    assert response.status_code == 302 and response["Location"] == f"/operations/{op.pk}/"
    assert op.host == lab and op.params["argvs"] == [["zpool", "scrub", "--", "tank"]]
    assert operator_client.session["host_id"] == lab.pk


def test_a_dataset_action_goes_to_the_datasets_host(
    operator_client, local_host, lab, lab_pages, django_capture_on_commit_callbacks
):
    on(operator_client, local_host)
    with django_capture_on_commit_callbacks(execute=False):
        operator_client.post(f"{lab_pages['dataset']}snapshots/create/", {"name": "before-upgrade"})
    op = Operation.objects.get(status="queued")
    assert op.host == lab and op.params["argvs"] == [["zfs", "snapshot", "--", "tank/media@before-upgrade"]]


def test_a_viewer_still_may_not_change_another_hosts_objects(viewer_client, local_host, lab_pages):
    on(viewer_client, local_host)
    for url in [
        f"{lab_pages['pool']}scrub/",
        f"{lab_pages['dataset']}snapshots/create/",
        f"{lab_pages['pool']}export/",
    ]:
        assert viewer_client.post(url, {"action": "start", "name": "x"}).status_code == 403, url
    assert viewer_client.post(f"{lab_pages['smb share']}delete/", {"confirm": "media"}).status_code == 403
    assert not Operation.objects.filter(status="queued").exists()
    assert viewer_client.session["host_id"] == local_host.pk  # refused before the view: nothing moved


def test_an_operator_still_may_not_do_what_only_an_admin_may(operator_client, local_host, lab_pages):
    on(operator_client, local_host)
    assert operator_client.post(f"{lab_pages['pool']}export/").status_code == 403
    assert operator_client.post(f"{lab_pages['pool']}destroy/", {"confirm": "tank"}).status_code == 403
    assert operator_client.post(f"{lab_pages['tuning change set']}revert/").status_code == 403
    assert not Operation.objects.filter(status="queued").exists()
