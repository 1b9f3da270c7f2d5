"""Benchmark schedules are bounded (issue 23 item 11): one fires at most once an hour (its minute is one number), and a
host has at most 20 enabled ones. A refusal is a 400 naming the field, and nothing is scheduled."""

import pytest
from django.utils import timezone
from django_celery_beat.models import PeriodicTask

from appliance.models import Host
from benchmarks import services
from benchmarks.choices import SCHEDULES_ENABLED_MAX
from benchmarks.models import Schedule
from pools.models import Dataset, Pool


def body(**kw):
    return {
        "host": "local",
        "name": "nightly",
        "profiles": ["seq-write-1"],
        "target": "tank/data",
        "size": "8g",
        "minute": "15",
        "hour": "*",
        "day_of_week": "*",
        **kw,
    }


def post(client, data):
    return client.post("/api/v1/benchmark-schedules/", data, content_type="application/json")


def beat_entries():
    return PeriodicTask.objects.filter(task="benchmarks.tasks.schedule_fire").count()


@pytest.mark.parametrize("minute", ["*", "*/15", "*/1", "0,30", "0-59", "0-1", "0,0"])
def test_a_schedule_firing_more_than_once_an_hour_is_a_400_naming_minute(operator_client, tank, minute):
    response = post(operator_client, body(minute=minute))
    assert response.status_code == 400, response.content
    assert "once an hour" in response.json()["minute"][0]
    assert not Schedule.objects.exists() and beat_entries() == 0


def test_one_minute_of_every_hour_is_the_most_often_a_schedule_fires(operator_client, tank):
    response = post(operator_client, body(minute="7", hour="*", day_of_week="*"))
    assert response.status_code == 201, response.content
    assert Schedule.objects.get().cron == "7 * * * *" and beat_entries() == 1


def test_an_every_minute_schedule_from_before_is_refused_on_its_next_edit(operator_client, tank):
    old = Schedule.objects.create(host=tank, name="old", profiles=["seq-write-1"], target="tank/data", minute="*")
    response = operator_client.patch(
        f"/api/v1/benchmark-schedules/{old.pk}/", {"hour": "2"}, content_type="application/json"
    )
    assert response.status_code == 400 and "minute" in response.json(), response.content
    old.refresh_from_db()
    assert old.hour == "3"


def test_the_page_refuses_an_every_minute_schedule_and_says_why(operator_client, tank):
    form = {**body(minute="*/5"), "profiles": "seq-write-1", "dataset": "tank/data", "drop_percent": "10"}
    form["enabled"] = "on"
    page = operator_client.post("/benchmarks/schedules/", form, follow=True).content.decode()
    assert "The minute must be one number" in page and not Schedule.objects.exists()
    assert "fires at most once an hour" in operator_client.get("/benchmarks/schedules/").content.decode()


def _fill(host, n, admin_user):
    for i in range(n):
        data = {**body(name=f"s{i}", minute=str(i)), "enabled": True}
        data.pop("host")
        services.schedule_save(host=host, user=admin_user, data=data)


def test_a_host_has_at_most_20_enabled_schedules(operator_client, tank, admin_user):
    assert SCHEDULES_ENABLED_MAX == 20
    _fill(tank, SCHEDULES_ENABLED_MAX, admin_user)
    response = post(operator_client, body(name="one-more"))
    assert response.status_code == 400, response.content
    assert "20 enabled" in response.json()["enabled"][0]
    assert Schedule.objects.count() == 20 and beat_entries() == 20
    # Saved disabled it is taken; enabling it is refused until another is disabled.
    response = post(operator_client, body(name="one-more", enabled=False))
    assert response.status_code == 201, response.content
    extra = Schedule.objects.get(name="one-more")
    url = f"/api/v1/benchmark-schedules/{extra.pk}/"
    enable = {"enabled": True}
    assert operator_client.patch(url, enable, content_type="application/json").status_code == 400
    assert not Schedule.objects.get(pk=extra.pk).enabled and not PeriodicTask.objects.get(pk=extra.task_id).enabled
    first = Schedule.objects.get(name="s0")
    disable = {"enabled": False}
    response = operator_client.patch(
        f"/api/v1/benchmark-schedules/{first.pk}/", disable, content_type="application/json"
    )
    assert response.status_code == 200, response.content
    assert operator_client.patch(url, enable, content_type="application/json").status_code == 200
    # Editing one of the 20 (still enabled) is not refused by the cap it is part of.
    second = Schedule.objects.get(name="s1")
    hour = {"hour": "4"}
    response = operator_client.patch(f"/api/v1/benchmark-schedules/{second.pk}/", hour, content_type="application/json")
    assert response.status_code == 200, response.content
    assert Schedule.objects.get(pk=second.pk).hour == "4"


def test_the_cap_is_per_host(tank, admin_user):
    _fill(tank, SCHEDULES_ENABLED_MAX, admin_user)
    other = Host.objects.create(name="nas2", transport="ssh", address="192.0.2.2")
    pool = Pool.objects.create(host=other, name="tank", guid="2", state="ONLINE", observed_at=timezone.now())
    Dataset.objects.create(
        host=other, pool=pool, name="tank/data", type="filesystem", mountpoint="/tank/data", observed_at=timezone.now()
    )
    _fill(other, 1, admin_user)
    assert Schedule.objects.filter(enabled=True).count() == SCHEDULES_ENABLED_MAX + 1
