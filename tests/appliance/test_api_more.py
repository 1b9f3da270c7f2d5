"""The API endpoints for the last page actions that had none: removing a host, re-reading who is connected to a
host's shares, and the sampler's settings."""

from appliance.models import AuditEntry, Host, Operation


def _nas(db):
    return Host.objects.create(name="nas9", transport="ssh", address="192.0.2.9")


def test_removing_a_host_needs_its_name_typed_and_an_admin(admin_client, operator_client, db):
    host = _nas(db)
    assert (
        operator_client.delete(
            f"/api/v1/hosts/{host.pk}/", {"confirm": "nas9"}, content_type="application/json"
        ).status_code
        == 403
    )
    wrong = admin_client.delete(f"/api/v1/hosts/{host.pk}/", {"confirm": "nas"}, content_type="application/json")
    assert wrong.status_code == 400 and "confirm" in wrong.json() and Host.objects.filter(pk=host.pk).exists()
    done = admin_client.delete(f"/api/v1/hosts/{host.pk}/", {"confirm": "nas9"}, content_type="application/json")
    assert done.status_code == 204 and not Host.objects.filter(pk=host.pk).exists()
    assert AuditEntry.objects.filter(argv__0="host-remove").exists()


def test_share_status_is_read_and_refreshed_as_an_operation(operator_client, viewer_client, local_host):
    assert viewer_client.get("/api/v1/share-status/local/").status_code == 200
    assert viewer_client.post("/api/v1/share-status/local/refresh/").status_code == 403
    started = operator_client.post("/api/v1/share-status/local/refresh/")
    assert started.status_code == 202 and Operation.objects.get(pk=started.json()["id"]).kind == "shares.status"
    assert operator_client.get("/api/v1/share-status/nowhere/").status_code == 404


def test_the_sampler_settings_are_read_by_all_and_changed_by_an_admin(admin_client, operator_client, db):
    assert operator_client.get("/api/v1/analytics/sampling/").json() == {
        "interval": 10,
        "raw_hours": 24,
        "rollup_days": 30,
    }
    body = {"interval": 20, "raw_hours": 48, "rollup_days": 90}
    assert operator_client.put("/api/v1/analytics/sampling/", body, content_type="application/json").status_code == 403
    saved = admin_client.put("/api/v1/analytics/sampling/", body, content_type="application/json")
    assert saved.status_code == 200 and saved.json() == body
    bad = admin_client.put("/api/v1/analytics/sampling/", {**body, "interval": 1}, content_type="application/json")
    assert bad.status_code == 400 and "interval" in bad.json()
    assert admin_client.get("/api/v1/analytics/sampling/").json() == body
