"""A refused form on a pool's or a dataset's page comes back open, the error under the field it names and what was
typed kept — never a toast over a form folded shut. Nothing is queued."""

import re

import pytest

from appliance.models import Operation
from tests.pools.test_pool_create_view import D


def _field_error(page: str, form_id: str, field: str) -> str:
    """The error paragraph right after the named field inside the element with form_id."""
    section = page.split(f'id="{form_id}"', 1)[1]
    found = re.search(rf'name="{field}"[^>]*>.*?<p class="error">([^<]+)</p>', section, re.S)
    return found.group(1) if found else ""


@pytest.mark.parametrize(
    "name, error",
    [
        ("bad name!", "name"),  # the host layer's name rules
        ("a", "tank/a exists already."),  # the service's rule, against the inventory
    ],
)
def test_a_refused_dataset_comes_back_open_with_the_error_under_the_name(operator_client, tank, name, error):
    pool = tank[0]
    response = operator_client.post(
        f"/pools/{pool.pk}/datasets/create/", {"parent": "tank", "name": name, "kind": "filesystem"}
    )
    page = response.content.decode()
    assert response.status_code == 400
    assert re.search(r'<details class="card" id="dataset-create" open>', page)
    assert error in _field_error(page, "dataset-create", "name")
    assert f'value="{name}"' in page  # what was typed is kept
    assert 'id="pool-add" open' not in page and "toast-error" not in page
    assert not Operation.objects.exists()


def test_a_refused_vdev_comes_back_open_with_the_reason(admin_client, tank):
    pool = tank[0]
    response = admin_client.post(f"/pools/{pool.pk}/add/", {"role": "data", "layout": "raidz2", "disks": [D(3), D(4)]})
    page = response.content.decode()
    assert response.status_code == 400 and 'id="pool-add" open' in page and "raidz2 needs at least 3" in page
    assert 'id="dataset-create" open' not in page and not Operation.objects.exists()


def test_changing_nothing_or_a_bad_quota_keeps_the_properties_form_open(operator_client, tank):
    data = tank[2]
    page = operator_client.post(f"/pools/datasets/{data.pk}/edit/", {}).content.decode()
    assert 'id="dataset-edit" open' in page and "Nothing to change" in page
    response = operator_client.post(f"/pools/datasets/{data.pk}/edit/", {"quota": "lots"})
    page = response.content.decode()
    assert response.status_code == 400 and 'id="dataset-edit" open' in page
    assert _field_error(page, "dataset-edit", "quota")
    assert not Operation.objects.exists()


def test_a_snapshot_name_taken_is_said_under_the_snapshot_form(operator_client, tank):
    data = tank[2]
    response = operator_client.post(f"/pools/datasets/{data.pk}/snapshots/create/", {"name": "s1"})
    page = response.content.decode()
    assert response.status_code == 400
    after = page.split('id="snapshot-create"', 1)[1]
    assert re.search(r'</form>\s*<p class="error">tank/a@s1 exists already.</p>', after)
    assert not Operation.objects.exists()
