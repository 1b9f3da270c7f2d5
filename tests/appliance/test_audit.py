"""The audit log: mutating requests and host commands recorded; nothing can delete or change them."""

import gzip
import json
from datetime import timedelta

import pytest
from django.db import connection, models
from django.test import override_settings
from django.utils import timezone

from appliance.connect import transport_for
from appliance.models import AuditEntry
from appliance.services import api_token_create, audit_prune
from tarn.celery import app


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


def test_an_api_request_records_its_token_its_parameters_masked_and_the_operation_it_started(
    client, admin_user, local_host, monkeypatch
):
    monkeypatch.setattr(app, "send_task", lambda *args, **kwargs: None)  # no broker needed: the row is what counts
    token, key = api_token_create(user=admin_user, name="ci")
    response = client.post(
        "/api/v1/samba-users/",
        {"host": "local", "username": "alice", "password": "Tr0ub4dor&3xyz"},
        content_type="application/json",
        headers={"Authorization": f"Bearer {key}"},
    )
    assert response.status_code == 202, response.content
    entry = AuditEntry.objects.get(path="/api/v1/samba-users/")
    assert (entry.auth, entry.token_id, entry.username) == ("token", token.pk, "alice")
    assert entry.params == {"host": "local", "username": "alice", "password": "***"}
    assert entry.operation_id == response.json()["id"]
    assert "Tr0ub4dor" not in str(entry.__dict__)


def test_a_page_request_records_the_session_and_its_form(admin_client, local_host):
    admin_client.post("/hosts/switch/", {"host": local_host.pk, "next": "/pools/"})
    entry = AuditEntry.objects.get(path="/hosts/switch/")
    assert entry.auth == "session" and entry.token is None
    assert entry.params == {"host": str(local_host.pk), "next": "/pools/"}


def backdate(entries, *, days: int) -> None:
    """As if written that long ago (entries are append-only: the test goes around the model's refusal)."""
    models.QuerySet.update(entries, at=timezone.now() - timedelta(days=days))


@pytest.fixture
def entries(db):
    AuditEntry.objects.bulk_create([AuditEntry(kind="request", method="POST", path=f"/p{i}") for i in range(120)])
    return list(AuditEntry.objects.order_by("-id").values_list("id", flat=True))


def test_audit_pages_are_found_by_id_not_by_offset(admin_client, entries):
    first = admin_client.get("/audit/").context["page"]
    assert [e.pk for e in first.object_list] == entries[:50] and first.newer is None
    second = admin_client.get("/audit/", {"before": first.older}).context["page"]
    assert [e.pk for e in second.object_list] == entries[50:100]
    third = admin_client.get("/audit/", {"before": second.older}).context["page"]
    assert [e.pk for e in third.object_list] == entries[100:] and third.older is None
    back = admin_client.get("/audit/", {"after": third.newer}).context["page"]
    assert [e.pk for e in back.object_list] == entries[50:100]
    api = admin_client.get("/api/v1/audit/", {"limit": 50}).json()
    assert [e["id"] for e in api["results"]] == entries[:50] and "cursor=" in api["next"]


def test_a_search_without_dates_looks_back_seven_days(admin_client, db):
    AuditEntry.objects.create(kind="request", method="POST", path="/pools/old")
    backdate(AuditEntry.objects.filter(path="/pools/old"), days=30)
    AuditEntry.objects.create(kind="request", method="POST", path="/pools/new")
    found = admin_client.get("/audit/", {"q": "pools"}).context["page"]
    assert [e.path for e in found.object_list] == ["/pools/new"]
    since = (timezone.now() - timedelta(days=60)).strftime("%Y-%m-%dT%H:%M")
    dated = admin_client.get("/audit/", {"q": "pools", "since": since}).context["page"]
    assert {e.path for e in dated.object_list} == {"/pools/new", "/pools/old"}


@override_settings(TARN_AUDIT_RETENTION_DAYS=30)
def test_retention_exports_then_prunes_and_says_so(db, settings, tmp_path):
    settings.DATA_DIR = tmp_path
    AuditEntry.objects.bulk_create([AuditEntry(kind="request", method="POST", path=f"/old{i}") for i in range(3)])
    backdate(AuditEntry.objects.all(), days=40)
    AuditEntry.objects.create(kind="request", method="POST", path="/recent")
    count, path = audit_prune()
    assert count == 3
    with gzip.open(path, "rt") as exported:
        assert sorted(json.loads(line)["path"] for line in exported) == ["/old0", "/old1", "/old2"]
    assert set(AuditEntry.objects.filter(kind="request").values_list("path", flat=True)) == {"/recent"}
    said = AuditEntry.objects.get(kind="command")
    assert said.argv == ["audit-prune", "3", str(path)]
    assert audit_prune() == (0, None)  # nothing older left: no empty file


def _indexed(text: str) -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM appliance_audit_search WHERE appliance_audit_search MATCH %s", [text])
        return cursor.fetchone()[0]


def test_the_text_search_is_answered_from_the_trigram_index_and_kept_by_triggers(admin_client, db, settings, tmp_path):
    assert connection.vendor == "sqlite"
    AuditEntry.objects.create(kind="command", argv=["zfs", "snapshot", "--", "tank/data@auto-99999"])
    AuditEntry.objects.create(kind="command", argv=["zfs", "snapshot", "--", "tank/data@auto-12345"])
    AuditEntry.objects.create(kind="request", method="POST", path='/pools/"odd" OR *')
    assert _indexed('"data@auto-99999"') == 1 and _indexed('"TANK/DATA"') == 2  # substrings, any case
    found = admin_client.get("/audit/", {"q": "tank/data@auto-99999"}).context["page"]
    assert [e.argv[-1] for e in found.object_list] == ["tank/data@auto-99999"]
    odd = admin_client.get("/audit/", {"q": '"odd" OR *'}).context["page"]  # quotes and operators are text
    assert [e.path for e in odd.object_list] == ['/pools/"odd" OR *']
    short = admin_client.get("/audit/", {"q": "99"}).context["page"]  # under three characters: scanned instead
    assert [e.argv[-1] for e in short.object_list] == ["tank/data@auto-99999"]
    settings.DATA_DIR, settings.TARN_AUDIT_RETENTION_DAYS = tmp_path, 30
    backdate(AuditEntry.objects.filter(kind="command"), days=40)
    audit_prune()
    assert _indexed('"tank/data"') == 0  # pruned rows leave the index with them


CANARIES = ("CANARY-PATH-1", "CANARY-PATH-2", "CANARY-PW-3", "CANARY-USER-4", "CANARY-NESTED-5", "CANARY-SECRET-6")


def _all_rows() -> str:
    return json.dumps(list(AuditEntry.objects.values()), default=str)


def test_webhook_urls_and_url_credentials_are_redacted_to_scheme_and_host_anywhere_in_the_parameters(
    admin_client, viewer_client
):
    hook = {"name": "hook", "kind": "webhook", "min_level": "warning", "smtp_port": 587, "smtp_security": "starttls"}
    saved = admin_client.post(
        "/api/v1/alert-channels/",
        {**hook, "url": "https://hooks.slack.com/services/T0/B0/CANARY-PATH-1", "secret": "CANARY-SECRET-6"},
        content_type="application/json",
    )
    assert saved.status_code == 201, saved.content
    page = admin_client.post(
        "/alerts/channels/add/",
        {**hook, "name": "teams", "url": "https://example.webhook.office.com/webhookb2/CANARY-PATH-2?sig=x"},
    )
    assert page.status_code == 302
    refused = admin_client.post(
        "/api/v1/alert-channels/",
        {
            **hook,
            "name": "two",
            "url": "http://user:CANARY-PW-3@example.org/",
            "note": ["x", {"u": "https://h.example/CANARY-NESTED-5"}],
        },
        content_type="application/json",
    )
    assert refused.status_code == 400 and "url" in refused.json()
    admin_client.post("/alerts/channels/add/", {**hook, "name": "three", "url": "http://CANARY-USER-4:pw@example.org/"})
    admin_client.post(
        "/api/v1/alert-channels/",
        {**hook, "name": "four", "options": [{"target": "see https://discord.com/api/webhooks/1/CANARY-NESTED-5"}]},
        content_type="application/json",
    )
    rows = _all_rows()
    assert AuditEntry.objects.filter(kind="request").count() == 5
    assert not [c for c in CANARIES if c in rows], rows
    params = [e.params for e in AuditEntry.objects.order_by("id")]
    assert params[0]["url"] == "https://hooks.slack.com/***" and params[0]["secret"] == "***"
    assert params[1]["url"] == "https://example.webhook.office.com/***"
    assert params[2]["url"] == "http://***@example.org/" and params[3]["url"] == "http://***@example.org/"
    assert params[4]["options"] == [{"target": "see https://discord.com/***"}]
    for client in (admin_client, viewer_client):  # what the page and the API show, too
        shown = client.get("/audit/").content.decode() + client.get("/api/v1/audit/").content.decode()
        assert not [c for c in CANARIES if c in shown]


def test_a_parameter_called_key_is_kept_and_a_secret_setting_value_is_masked(admin_client, local_host):
    response = admin_client.post(
        "/api/v1/tunables/",
        {"host": "local", "kind": "sysctl", "key": "net.core.rmem_max", "value": "big number"},
        content_type="application/json",
    )
    assert response.status_code == 400  # refused before anything runs: the audit entry is what counts
    admin_client.post(
        "/api/v1/tunables/",
        {"host": "local", "kind": "sysctl", "key": "net.ipv4.tcp_fastopen_key", "value": "CANARY-KEY-7"},
        content_type="application/json",
    )
    first, second = AuditEntry.objects.order_by("id")
    assert first.params == {"host": "local", "kind": "sysctl", "key": "net.core.rmem_max", "value": "big number"}
    assert second.params["key"] == "net.ipv4.tcp_fastopen_key" and second.params["value"] == "***"
    assert "CANARY-KEY-7" not in _all_rows()


def test_request_parameters_are_shown_to_admins_only(admin_client, operator_client, viewer_client):
    AuditEntry.objects.create(kind="request", method="POST", path="/x", params={"address": "nas7.example.org"})
    assert "nas7.example.org" in admin_client.get("/audit/").content.decode()
    assert admin_client.get("/api/v1/audit/").json()["results"][0]["params"] == {"address": "nas7.example.org"}
    for client in (operator_client, viewer_client):
        page = client.get("/audit/")
        assert page.status_code == 200 and "/x" in page.content.decode()
        assert "nas7.example.org" not in page.content.decode()
        assert client.get("/api/v1/audit/").json()["results"][0]["params"] is None
