"""Replication's pages and API over rows (no host is reached: what a run does is the lab's to prove)."""

from datetime import timedelta

import pytest
from django.utils import timezone

from appliance.models import Operation
from replication.models import Pair, Task, TaskRun
from tests.replication.test_services import add_dataset, ended_run, host_with


@pytest.fixture
def pair(db):
    source = host_with("nas1", "tank", "tank/docs", snapshots={"tank/docs": ("auto-1", "manual")})
    target = host_with("nas2", "backup", "backup/lab")
    return Pair.objects.create(source=source, target=target, address="10.78.0.2", root="backup/lab", status="paired")


def test_the_page_says_what_to_do_first_then_lists_pairs_and_tasks(admin_client, viewer_client, pair):
    Pair.objects.all().delete()
    empty = admin_client.get("/replication/").content.decode()
    assert "Pair two hosts first" in empty and 'href="/replication/pairs/new/"' in empty
    pair.pk = None
    pair.save()
    task = Task.objects.create(pair=pair, source_dataset="tank/docs", target_name="docs", pattern="auto-*")
    ended_run(task, "succeeded", sent=3 << 20, message="Sent 3 MiB")
    page = admin_client.get("/replication/").content.decode()
    assert "backup/lab/docs" in page and "badge-succeeded" in page and "auto-*" in page and "Unpair" in page
    seen = viewer_client.get("/replication/").content.decode()
    assert "backup/lab/docs" in seen and "Run now" not in seen and "Unpair" not in seen
    detail = viewer_client.get(f"/replication/tasks/{task.pk}/").content.decode()
    assert "Sent 3 MiB" in detail and "3.0\xa0MB" in detail and "Nothing replicated yet" in detail


def test_a_bad_task_on_the_form_names_its_field_and_saves_nothing(admin_client, pair):
    form = {"pair": pair.pk, "source_dataset": "tank/docs", "target_name": "docs", "limit": 0, "keep": 0}
    bad = admin_client.post("/replication/tasks/new/", {**form, "pattern": "hourly-*"}).content.decode()
    assert "No snapshot of tank/docs matches" in bad and not Task.objects.exists()
    late = admin_client.post("/replication/tasks/new/", {**form, "cron": "0 25 * * *"}).content.decode()
    assert "The hour: 25 is outside 0-23" in late and not Task.objects.exists()
    trimmed = admin_client.post("/replication/tasks/new/", {**form, "source_dataset": "tank/docs "}).content.decode()
    assert "no spaces" in trimmed and not Task.objects.exists(), "a name is taken as typed, never trimmed"
    good = admin_client.post(
        "/replication/tasks/new/", {**form, "pattern": "auto-*", "limit": 50, "excludes": " , ", "cron": "0 2 * * *"}
    )
    task = Task.objects.get()
    assert good.status_code == 302 and good["Location"] == f"/replication/tasks/{task.pk}/"
    assert task.limit == 50 << 20 and task.excludes == [] and task.cron == "0 2 * * *"
    shown = admin_client.get(good["Location"]).content.decode()
    assert "at <code>0 2 * * *</code> (cron)" in shown and "Next at " in shown


def test_a_task_every_n_minutes_shows_its_next_run_too_and_a_paused_one_none(viewer_client, pair):
    last = timezone.now() - timedelta(minutes=10)
    task = Task.objects.create(pair=pair, source_dataset="tank/docs", target_name="docs", every_minutes=60)
    Task.objects.filter(pk=task.pk).update(last_run_at=last)
    shown = viewer_client.get(f"/replication/tasks/{task.pk}/").content.decode()
    assert f"Next at {timezone.localtime(last + timedelta(minutes=60)):%Y-%m-%d %H:%M}." in shown
    Task.objects.filter(pk=task.pk).update(enabled=False)
    assert "Next at" not in viewer_client.get(f"/replication/tasks/{task.pk}/").content.decode()


def test_the_api_makes_runs_and_deletes_a_task(admin_client, operator_client, pair, django_capture_on_commit_callbacks):
    api = "/api/v1/replication-tasks/"
    bad = admin_client.post(
        api, {"pair": pair.pk, "source_dataset": "tank/docs", "target_name": "a/b"}, "application/json"
    )
    assert bad.status_code == 400 and "target_name" in bad.json()
    made = admin_client.post(
        api, {"pair": pair.pk, "source_dataset": "tank/docs", "target_name": "docs"}, "application/json"
    )
    assert made.status_code == 201 and made.json()["target_dataset"] == "backup/lab/docs"
    task = made.json()["id"]
    assert operator_client.post(api, {}, "application/json").status_code == 403
    with django_capture_on_commit_callbacks(execute=False):
        ran = operator_client.post(f"{api}{task}/run/")
    assert ran.status_code == 202 and TaskRun.objects.get().operation_id == ran.json()["id"]
    with django_capture_on_commit_callbacks(execute=False):
        again = operator_client.post(f"{api}{task}/run/")
    assert again.status_code == 400 and "already running" in again.content.decode(), "one run per task at a time"
    assert operator_client.get(f"{api}{task}/runs/").json()[0]["status"] == "queued"  # its operation's
    wrong = admin_client.delete(f"{api}{task}/", {"confirm": "docs"}, "application/json")
    assert wrong.status_code == 400 and "backup/lab/docs" in wrong.content.decode()
    Operation.objects.all().update(status="succeeded")
    with django_capture_on_commit_callbacks(execute=False):
        gone = admin_client.delete(f"{api}{task}/", {"confirm": "backup/lab/docs"}, "application/json")
    assert gone.status_code == 202 and Operation.objects.get(pk=gone.json()["id"]).kind == "replication.task_delete"


def test_pairing_is_for_admins_and_a_bad_address_is_a_400(admin_client, operator_client, pair):
    api = "/api/v1/replication-pairs/"
    body = {"source": "nas1", "target": "nas2", "address": "10.78.0.2", "root": "backup/lab", "quota": "1T"}
    assert operator_client.post(api, body, "application/json").status_code == 403
    assert operator_client.get("/replication/pairs/new/").status_code == 403
    bad = admin_client.post(api, {**body, "address": "nas2.local"}, "application/json")
    assert bad.status_code == 400 and "address" in bad.json()
    for port in (0, 65536):
        refused = admin_client.post(api, {**body, "port": port}, "application/json")
        assert refused.status_code == 400 and "port" in refused.json()
    no_quota = admin_client.post(api, {**body, "quota": "0"}, "application/json")
    assert no_quota.status_code == 400 and "quota" in no_quota.json()
    twice = admin_client.post(api, body, "application/json")
    assert twice.status_code == 400 and "already paired" in twice.content.decode()


def test_a_pull_pair_from_the_page_needs_its_send_root_and_the_list_says_who_dials(
    admin_client, pair, django_capture_on_commit_callbacks
):
    body = {"source": "nas1", "target": "nas2", "direction": "pull", "address": "10.78.0.1", "port": 22, "quota": "2T"}
    bad = admin_client.post("/replication/pairs/new/", {**body, "root": "backup"})
    assert "A pull pair names what it may send" in bad.content.decode()  # the form again, the field named
    assert 'value="10.78.0.1"' in bad.content.decode() and not Operation.objects.exists(), "kept, nothing started"
    with django_capture_on_commit_callbacks(execute=False):
        made = admin_client.post("/api/v1/replication-pairs/", {**body, "root": "backup", "send_root": "tank/docs"})
    assert made.status_code == 202 and Operation.objects.get().kind == "replication.pair"
    Pair.objects.filter(direction="pull").update(status="paired", sender_address="10.78.0.2")
    page = admin_client.get("/replication/").content.decode()
    assert "sends <code>tank/docs</code> and below" in page and "the target holds the key" in page
    assert "the source holds the key" in page, "the push pair beside it"


def test_failing_over_is_an_admins_with_the_replica_typed(
    admin_client, operator_client, pair, django_capture_on_commit_callbacks
):
    task = Task.objects.create(pair=pair, source_dataset="tank/docs", target_name="docs")
    api = f"/api/v1/replication-tasks/{task.pk}/failover/"
    assert operator_client.post(api, {"confirm": "backup/lab/docs"}, "application/json").status_code == 403
    wrong = admin_client.post(api, {"confirm": "docs"}, "application/json")
    assert wrong.status_code == 400 and "backup/lab/docs" in wrong.content.decode() and not Operation.objects.exists()
    with django_capture_on_commit_callbacks(execute=False):
        done = admin_client.post(api, {"confirm": "backup/lab/docs"}, "application/json")
    assert done.status_code == 202 and Operation.objects.get().kind == "replication.failover"


def test_restoring_from_the_task_page_names_a_bad_field_or_goes_to_its_operation(
    admin_client, viewer_client, pair, django_capture_on_commit_callbacks
):
    task = Task.objects.create(pair=pair, source_dataset="tank/docs", target_name="docs")
    empty = admin_client.get(f"/replication/tasks/{task.pk}/").content.decode()
    assert "No snapshot of the replica yet" in empty and "Over ssh (aes128-gcm)" in empty
    Task.objects.filter(pk=task.pk).update(transport="tcp")
    clear = admin_client.get(f"/replication/tasks/{task.pk}/").content.decode()
    assert "The data goes in the clear over its own TCP connection" in clear
    add_dataset(pair.target, "backup/lab/docs", ("auto-1",))
    page = admin_client.get(f"/replication/tasks/{task.pk}/").content.decode()
    assert 'value="backup/lab/docs@auto-1"' in page and "Restore" in page
    assert "Restore</button>" not in viewer_client.get(f"/replication/tasks/{task.pk}/").content.decode()
    url = f"/replication/tasks/{task.pk}/restore/"
    bad = admin_client.post(url, {"snapshot": "backup/lab/docs@auto-1", "how": "clone", "name": "backup/lab"})
    assert bad.status_code == 400 and "backup/lab exists already" in bad.content.decode()
    assert not Operation.objects.exists()
    with django_capture_on_commit_callbacks(execute=False):
        good = admin_client.post(url, {"snapshot": "backup/lab/docs@auto-1", "how": "clone", "name": "backup/lab/r"})
    assert good.status_code == 302 and good["Location"] == f"/operations/{Operation.objects.get().pk}/"


def test_the_dashboard_shows_each_tasks_last_run_and_how_old_its_replicated_data_is(admin_client, pair):
    assert 'id="replication"' not in admin_client.get("/").content.decode(), "no task: no panel"
    task = Task.objects.create(pair=pair, source_dataset="tank/docs", target_name="docs")
    ended_run(task, "failed", message="the target pool is full")
    now = timezone.now()
    task.datasets.create(
        source="tank/docs",
        target="backup/lab/docs",
        snapshot="auto-2",
        guid="7",
        snapshot_created_at=now - timedelta(hours=3),
        replicated_at=now - timedelta(minutes=5),
    )
    page = admin_client.get("/").content.decode()
    panel = page[page.index('id="replication"') :]
    assert "badge-failed" in panel and "3\xa0hours ago" in panel and "5\xa0minutes ago" in panel
    assert f'href="/replication/tasks/{task.pk}/"' in panel


def test_numbers_in_other_scripts_digits_are_refused_naming_the_field(admin_client, pair):
    form = {"pair": pair.pk, "source_dataset": "tank/docs", "target_name": "docs", "limit": "١٠", "keep": 0}
    page = admin_client.post("/replication/tasks/new/", form).content.decode()
    assert "A whole number written with the digits 0-9" in page and not Task.objects.exists()
    api = admin_client.post("/api/v1/replication-tasks/", {**form, "limit": "１０"}, "application/json")
    assert api.status_code == 400 and "limit" in api.json() and not Task.objects.exists()
    unknown = admin_client.post(
        "/api/v1/replication-pairs/",
        {"source": "nas1", "target": "nas9", "address": "10.78.0.2", "root": "backup/lab"},
        "application/json",
    )
    assert unknown.status_code == 400 and "target" in unknown.json() and Pair.objects.count() == 1
