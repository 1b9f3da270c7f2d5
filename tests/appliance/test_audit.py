"""The audit log: mutating requests and host commands recorded; nothing can delete or change them."""

import pytest

from appliance.connect import transport_for
from appliance.models import AuditEntry


def test_mutating_requests_are_recorded_with_who_and_result(operator_client, local_host):
    operator_client.post("/hosts/switch/", {"host": local_host.pk})
    entry = AuditEntry.objects.get(path="/hosts/switch/")
    assert (entry.username, entry.method, entry.status_code) == ("oscar", "POST", 302)


def test_reads_are_not_recorded(viewer_client):
    viewer_client.get("/")
    assert not AuditEntry.objects.exists()


def test_mutating_host_commands_are_recorded_with_argv_exit_code_and_duration(local_host, admin_user):
    t = transport_for(local_host, user=admin_user)
    t.run(["true"], mutating=True)
    t.run(["true"])  # a read: not recorded
    entry = AuditEntry.objects.get(kind="command")
    assert entry.argv == ["true"] and entry.exit_code == 0 and entry.host_name == "local"
    assert entry.username == "alice" and entry.duration_ms is not None


def test_entries_cannot_be_deleted_or_changed(db):
    entry = AuditEntry.objects.create(kind="request", method="POST", path="/x")
    with pytest.raises(PermissionError):
        entry.delete()
    with pytest.raises(PermissionError):
        AuditEntry.objects.all().delete()
    with pytest.raises(PermissionError):
        AuditEntry.objects.update(path="/y")
    entry.path = "/y"
    with pytest.raises(PermissionError):
        entry.save()


def test_the_api_offers_no_way_to_delete(admin_client):
    entry = AuditEntry.objects.create(kind="request", method="POST", path="/x")
    assert admin_client.delete(f"/api/v1/audit/{entry.pk}/").status_code == 405
    assert AuditEntry.objects.filter(pk=entry.pk).exists()


def test_the_audit_page_filters(admin_client):
    AuditEntry.objects.create(kind="request", method="POST", path="/alpha", username="alice")
    AuditEntry.objects.create(kind="command", argv=["zfs", "destroy", "tank/beta"], username="bob", host_name="local")
    page = admin_client.get("/audit/", {"kind": "command"}).content.decode()
    assert "tank/beta" in page and "/alpha" not in page
    page = admin_client.get("/audit/", {"q": "alpha"}).content.decode()
    assert "/alpha" in page and "tank/beta" not in page
    api = admin_client.get("/api/v1/audit/", {"user": "bob"}).json()
    assert [e["argv"] for e in api["results"]] == [["zfs", "destroy", "tank/beta"]]
