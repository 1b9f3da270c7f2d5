"""The API: schema and docs served without internet; hosts, operations and audit endpoints."""

import re

from django.core.management import call_command

from appliance.models import Operation


def test_the_schema_lists_the_endpoints_and_bearer_auth(viewer_client):
    schema = viewer_client.get("/api/v1/schema/", headers={"Accept": "application/json"}).content.decode()
    for path in ["/api/v1/hosts/", "/api/v1/hosts/{id}/probe/", "/api/v1/operations/", "/api/v1/audit/"]:
        assert path in schema
    assert "bearerAuth" in schema


def test_the_schema_is_valid_openapi_without_warnings(tmp_path):
    """Every endpoint's request and response is described (an undescribed one is a drf-spectacular warning)."""
    call_command("spectacular", "--fail-on-warn", "--validate", "--file", str(tmp_path / "schema.yml"))
    schema = (tmp_path / "schema.yml").read_text()
    assert "/api/v1/smb-shares/{id}/folder/" in schema and "ShareFolderRequest" in schema


def test_the_docs_page_loads_only_local_assets(viewer_client):
    page = viewer_client.get("/api/v1/docs/").content.decode()
    assets = re.findall(r'(?:src|href)="([^"]+)"', page)
    assert assets and all(a.startswith("/") and not a.startswith("//") for a in assets), assets  # this site only
    for asset in (a for a in assets if a.startswith("/static/")):
        assert viewer_client.get(asset).status_code == 200, asset


def test_probing_a_host_through_the_api_returns_its_operation(
    operator_client, local_host, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=False):
        response = operator_client.post(f"/api/v1/hosts/{local_host.pk}/probe/")
    assert response.status_code == 202
    body = response.json()
    assert body["kind"] == "appliance.host_probe" and body["status"] == "queued" and body["host"] == "local"
    assert operator_client.get(f"/api/v1/operations/{body['id']}/").json()["id"] == body["id"]
    listed = operator_client.get("/api/v1/operations/", {"status": "queued"}).json()
    assert [o["id"] for o in listed["results"]] == [body["id"]]


def test_a_second_probe_while_one_is_active_is_a_400_naming_why(
    operator_client, local_host, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=False):
        operator_client.post(f"/api/v1/hosts/{local_host.pk}/probe/")
        second = operator_client.post(f"/api/v1/hosts/{local_host.pk}/probe/")
    assert second.status_code == 400
    assert "already running on host:local" in str(second.json())
    assert Operation.objects.count() == 1
