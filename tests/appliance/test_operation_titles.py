"""Operation pages say in words what the operation is ("Unlock tank/secret on lab") and link back to where it came
from; every kind a runner is declared for has its words, so a new kind is covered the day it is added."""

import pytest

from appliance.models import Host, Operation
from appliance.operations import RUNNERS, lock_key
from appliance.titles import TITLES, operation_title
from tests.pools.conftest import tank  # noqa: F401 (a fixture)
from tests.support.apps import product_apps

# runs kinds the services name (pools.dataset_create, pools.scrub_start…), each titled
SHARED_RUNNERS = {"pools.command"}


def _op(host, kind, subject_parts, params, runner=""):
    return Operation.objects.create(
        kind=kind, runner=runner, host=host, target=lock_key(host, *subject_parts), params=params, status="failed"
    )


def test_every_declared_kind_has_a_title():
    declared = [kind for kind, fn in RUNNERS.items() if fn.__module__.split(".")[0] in product_apps()]
    assert len(declared) > 40  # the product's, not the tests' own
    missing = sorted(kind for kind in declared if kind not in TITLES and kind not in SHARED_RUNNERS)
    assert not missing, f"operation kinds without a title in their app's titles.py: {missing}"


def test_the_unlock_page_names_the_root_and_the_host_and_links_back_to_the_form(viewer_client, db):
    lab = Host.objects.create(name="lab", address="10.0.0.9")
    op = _op(lab, "encryption.unlock", ["encryption", "tank/secret"], {"roots": ["tank/secret"], "dry_run": False})
    page = viewer_client.get(f"/operations/{op.pk}/").content.decode()
    assert "<h1>Unlock tank/secret on lab</h1>" in page
    assert "<title>Unlock tank/secret on lab · Tarn</title>" in page
    assert '<a href="/encryption/#unlock-form" id="operation-back">← Back to Encryption</a>' in page
    listed = viewer_client.get("/operations/").content.decode()
    assert f'<a href="/operations/{op.pk}/">Unlock tank/secret on lab</a>' in listed


def test_a_storage_command_names_its_dataset_and_links_back_to_its_pool(viewer_client, tank):  # noqa: F811
    pool, root, data = tank
    op = _op(
        pool.host, "pools.dataset_create", ["dataset", "tank/new"], {"argvs": [], "done": ""}, runner="pools.command"
    )
    page = viewer_client.get(f"/operations/{op.pk}/").content.decode()
    assert "<h1>Create dataset tank/new on local</h1>" in page
    assert f'<a href="/pools/{pool.pk}/" id="operation-back">← Back to tank</a>' in page  # not made
    snap = _op(pool.host, "pools.snapshot_create", ["dataset", "tank/a"], {}, runner="pools.command")
    page = viewer_client.get(f"/operations/{snap.pk}/").content.decode()
    assert "<h1>Take a snapshot of tank/a on local</h1>" in page
    assert f'<a href="/pools/datasets/{data.pk}/" id="operation-back">← Back to tank/a</a>' in page
    scrub = _op(pool.host, "pools.scrub_start", ["pool", "tank", "scrub"], {}, runner="pools.command")
    assert operation_title(scrub) == "Scrub tank on local"


@pytest.mark.parametrize("params", [{}, {"roots": 3}])
def test_an_unknown_kind_or_params_of_another_release_show_the_kind(db, params):
    lab = Host.objects.create(name="lab", address="10.0.0.9")
    assert operation_title(_op(lab, "something.new", ["x"], params)) == "something.new"
    assert operation_title(_op(lab, "encryption.lock", ["encryption", "tank"], params)) == "encryption.lock"
