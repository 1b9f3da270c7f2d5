"""Valid-looking hostile input gets a 400 (or a message) naming the problem, never a 500."""

import pytest

from appliance.models import Operation
from hostlib import names
from hostlib.configfiles import InvalidShare
from hostlib.samba import SmbGlobals, SmbShareSpec, render_smb


@pytest.mark.parametrize("text", ["\u202eevil", "a\u200bb", "x\u2066y\u2069", "\ufeffbom", "del\x7f", "c1\x85"])
def test_invisible_and_bidi_characters_never_reach_smb_conf(text):
    with pytest.raises(InvalidShare) as caught:
        render_smb(SmbGlobals(server_string=text), [SmbShareSpec(name="docs", path="/tank/docs", comment=text)])
    assert caught.value.problems


@pytest.mark.parametrize("name", ["tank/.zfs", "tank/a/.zfs", "tank/" + "/".join(["d"] * 51)])
def test_dataset_names_openzfs_would_refuse_or_that_hide_snapshots_are_refused(name):
    with pytest.raises(names.InvalidName):
        names.dataset_name(name)


def test_a_dataset_fifty_levels_deep_is_allowed():
    assert names.dataset_name("tank/" + "/".join(["d"] * 50))


def test_a_non_numeric_host_switch_is_a_message_not_a_500(admin_client):
    response = admin_client.post("/hosts/switch/", {"host": "1 or 1=1"}, follow=True)
    assert response.status_code == 200 and "Choose a host" in response.content.decode()


def test_api_pages_are_capped(admin_client, local_host):
    Operation.objects.bulk_create(
        [Operation(kind="x", target=f"t{i}", host=local_host, status="succeeded") for i in range(501)]
    )
    response = admin_client.get("/api/v1/operations/", {"limit": 100000})
    assert response.status_code == 200 and len(response.json()["results"]) == 500


def test_a_deeply_nested_json_body_is_a_400(admin_client):
    body = "[" * 100_000 + "]" * 100_000
    response = admin_client.post("/api/v1/datasets/", body, content_type="application/json")
    assert response.status_code == 400


def test_an_unknown_snapshot_order_falls_back_to_newest_first(admin_client, local_host):
    assert admin_client.get("/pools/snapshots/", {"order": "name); DROP TABLE x;--"}).status_code == 200
