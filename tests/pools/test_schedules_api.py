"""Snapshot schedules, scrub schedules and disk figures through the API: the same services as the pages, the same
roles (viewers read, operators schedule, admins set disk figures), and every refusal a 400 naming the field."""

import pytest
from django.utils import timezone

from pools.models import Dataset, MediaSpeed, Pool, ScrubSchedule, SnapshotTask


@pytest.fixture
def tank(local_host):
    """A pool 'tank' with the filesystems tank and tank/a, and the zvol tank/vol."""
    now = timezone.now()
    pool = Pool.objects.create(host=local_host, name="tank", guid="1", state="ONLINE", observed_at=now)
    for name, kind in (("tank", "filesystem"), ("tank/a", "filesystem"), ("tank/vol", "volume")):
        Dataset.objects.create(host=local_host, pool=pool, name=name, type=kind, observed_at=now)
    return pool


def send(client, method, url, body=None):
    return getattr(client, method)(url, body or {}, content_type="application/json")


HOURLY = {"host": "local", "dataset": "tank/a", "every_minutes": 60, "prefix": "hourly", "keep_count": 24}


# --- snapshot schedules -----------------------------------------------------------------------------------------
def test_an_operator_creates_lists_changes_and_removes_a_snapshot_schedule(operator_client, viewer_client, tank):
    created = send(operator_client, "post", "/api/v1/snapshot-tasks/", HOURLY)
    assert created.status_code == 201, created.content
    task = SnapshotTask.objects.get()
    assert created.json()["id"] == task.pk and created.json()["host"] == "local"
    saved = (task.dataset, task.every_minutes, task.prefix, task.keep_count, task.keep_days)
    assert saved == ("tank/a", 60, "hourly", 24, None)
    listed = viewer_client.get("/api/v1/snapshot-tasks/?host=local").json()["results"]
    assert [t["prefix"] for t in listed] == ["hourly"]
    assert viewer_client.get("/api/v1/snapshot-tasks/?host=elsewhere").json()["results"] == []

    patched = send(operator_client, "patch", f"/api/v1/snapshot-tasks/{task.pk}/", {"keep_days": 2})
    assert patched.status_code == 200, patched.content
    task.refresh_from_db()
    assert (task.keep_count, task.keep_days, task.every_minutes) == (24, 2, 60)  # only what was named changed
    assert patched.json()["keep_days"] == 2

    put = send(operator_client, "put", f"/api/v1/snapshot-tasks/{task.pk}/", {**HOURLY, "every_minutes": 15})
    assert put.status_code == 200, put.content
    task.refresh_from_db()
    assert task.every_minutes == 15

    assert operator_client.delete(f"/api/v1/snapshot-tasks/{task.pk}/").status_code == 204
    assert not SnapshotTask.objects.exists()


def test_a_viewer_may_read_snapshot_schedules_but_not_change_them(viewer_client, tank, local_host):
    task = SnapshotTask.objects.create(host=local_host, dataset="tank/a", keep_count=3)
    assert viewer_client.get(f"/api/v1/snapshot-tasks/{task.pk}/").status_code == 200
    assert send(viewer_client, "post", "/api/v1/snapshot-tasks/", HOURLY).status_code == 403
    assert send(viewer_client, "patch", f"/api/v1/snapshot-tasks/{task.pk}/", {"keep_count": 1}).status_code == 403
    assert viewer_client.delete(f"/api/v1/snapshot-tasks/{task.pk}/").status_code == 403
    task.refresh_from_db()
    assert task.keep_count == 3 and SnapshotTask.objects.count() == 1


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"dataset": "tank/nope"}, "dataset"),
        ({"dataset": "tank/vol"}, "dataset"),  # a zvol has no filesystem to snapshot on a schedule
        ({"keep_count": None}, "keep_count"),  # kept forever
        ({"keep_count": -1}, "keep_count"),
        ({"every_minutes": 1}, "every_minutes"),
        ({"every_minutes": "often"}, "every_minutes"),
        ({"prefix": "hourly;rm"}, "prefix"),
        ({"prefix": "x" * 41}, "prefix"),
        ({"host": "nohost"}, "host"),
    ],
)
def test_a_bad_snapshot_schedule_is_a_400_naming_the_field(operator_client, tank, change, field):
    response = send(operator_client, "post", "/api/v1/snapshot-tasks/", {**HOURLY, **change})
    assert response.status_code == 400 and field in response.json(), response.content
    assert not SnapshotTask.objects.exists()


def test_a_second_schedule_with_the_same_prefix_is_a_400_naming_the_prefix(operator_client, tank, local_host):
    SnapshotTask.objects.create(host=local_host, dataset="tank/a", prefix="hourly", keep_count=3)
    response = send(operator_client, "post", "/api/v1/snapshot-tasks/", HOURLY)
    assert response.status_code == 400 and "already has a schedule" in response.json()["prefix"][0]
    assert SnapshotTask.objects.count() == 1


def test_a_change_that_would_keep_snapshots_forever_is_refused_and_changes_nothing(operator_client, tank, local_host):
    task = SnapshotTask.objects.create(host=local_host, dataset="tank/a", keep_count=3)
    response = send(operator_client, "patch", f"/api/v1/snapshot-tasks/{task.pk}/", {"keep_count": None})
    assert response.status_code == 400 and "keep_count" in response.json(), response.content
    task.refresh_from_db()
    assert task.keep_count == 3


def test_the_page_gives_the_same_refusals_on_its_form(operator_client, tank, local_host):
    SnapshotTask.objects.create(host=local_host, dataset="tank/a", prefix="hourly", keep_count=3)
    form = {"dataset": "tank/a", "every_minutes": 60, "prefix": "hourly", "keep_count": 24}
    page = operator_client.post("/pools/schedules/", form)
    assert page.status_code == 200 and "already has a schedule with the prefix hourly" in page.content.decode()
    page = operator_client.post("/pools/schedules/", {**form, "prefix": "daily", "keep_count": ""})
    assert "snapshots kept forever fill the pool" in page.content.decode()
    assert SnapshotTask.objects.count() == 1
    assert operator_client.post("/pools/schedules/", {**form, "prefix": "daily"}).status_code == 302
    assert SnapshotTask.objects.filter(prefix="daily", keep_count=24).exists()


# --- scrub schedules --------------------------------------------------------------------------------------------
def test_an_operator_sets_and_removes_a_pools_scrub_schedule(operator_client, viewer_client, tank):
    url = f"/api/v1/pools/{tank.pk}/scrub-schedule/"
    assert viewer_client.get(f"/api/v1/pools/{tank.pk}/").json()["scrub_schedule"] is None
    response = send(operator_client, "put", url, {"every_days": 30})
    assert response.status_code == 200, response.content
    assert response.json() == {"pool": "tank", "every_days": 30, "last_run_at": None}
    assert ScrubSchedule.objects.get(pool="tank").every_days == 30
    assert viewer_client.get(f"/api/v1/pools/{tank.pk}/").json()["scrub_schedule"]["every_days"] == 30
    assert send(operator_client, "put", url, {"every_days": 7}).json()["every_days"] == 7
    assert ScrubSchedule.objects.get().every_days == 7
    assert operator_client.delete(url).status_code == 204
    assert not ScrubSchedule.objects.exists()


def test_a_viewer_may_not_change_a_scrub_schedule(viewer_client, tank, local_host):
    ScrubSchedule.objects.create(host=local_host, pool="tank", every_days=30)
    url = f"/api/v1/pools/{tank.pk}/scrub-schedule/"
    assert send(viewer_client, "put", url, {"every_days": 7}).status_code == 403
    assert viewer_client.delete(url).status_code == 403
    assert ScrubSchedule.objects.get().every_days == 30


@pytest.mark.parametrize("every_days", [400, 0, -3, "monthly", None])
def test_a_bad_scrub_interval_is_a_400_naming_every_days(operator_client, tank, local_host, every_days):
    ScrubSchedule.objects.create(host=local_host, pool="tank", every_days=30)
    response = send(operator_client, "put", f"/api/v1/pools/{tank.pk}/scrub-schedule/", {"every_days": every_days})
    assert response.status_code == 400 and "every_days" in response.json(), response.content
    assert ScrubSchedule.objects.get().every_days == 30


# --- disk figures -----------------------------------------------------------------------------------------------
def test_an_admin_sets_the_disk_figures_the_preview_uses(admin_client, viewer_client, local_host):
    listed = {m["media"]: m for m in viewer_client.get("/api/v1/media-speeds/").json()}
    assert set(listed) == {"hdd", "ssd", "nvme"}
    response = send(admin_client, "put", "/api/v1/media-speeds/hdd/", {"mb_s": 250, "iops": 90})
    assert response.status_code == 200, response.content
    assert response.json() == {"media": "hdd", "mb_s": 250, "iops": 90}
    assert (MediaSpeed.objects.get(media="hdd").mb_s, MediaSpeed.objects.get(media="hdd").iops) == (250, 90)
    assert {"media": "hdd", "mb_s": 250, "iops": 90} in viewer_client.get("/api/v1/media-speeds/").json()


def test_only_an_admin_may_set_disk_figures(operator_client, viewer_client, local_host):
    for client in (operator_client, viewer_client):
        assert send(client, "put", "/api/v1/media-speeds/hdd/", {"mb_s": 1, "iops": 1}).status_code == 403
    assert not MediaSpeed.objects.exists()


@pytest.mark.parametrize(
    ("media", "body", "field"),
    [
        ("tape", {"mb_s": 100, "iops": 100}, "media"),
        ("hdd", {"mb_s": 0, "iops": 100}, "mb_s"),
        ("hdd", {"mb_s": "fast", "iops": 100}, "mb_s"),
        ("hdd", {"mb_s": 100}, "iops"),
    ],
)
def test_bad_disk_figures_are_a_400_naming_the_field(admin_client, local_host, media, body, field):
    response = send(admin_client, "put", f"/api/v1/media-speeds/{media}/", body)
    assert response.status_code == 400 and field in response.json(), response.content
    assert not MediaSpeed.objects.exists()
