"""The capacity series and forecasts from Tarn's inventory rows (as a refresh leaves them): points at most an hour
apart, a forecast that counts what retention frees, the alert, the pages and the API. The lab's back-test
(tests/lab/test_capacity.py) records a real pool filling."""

from datetime import timedelta

import pytest
from django.utils import timezone

from analytics.models import Alert
from analytics.services import alerts_evaluate
from capacity import services
from capacity.models import CapacityPoint, Forecast
from pools.models import Dataset, Pool, Snapshot, SnapshotTask

GIB = 1 << 30
NOW = timezone.now().replace(microsecond=0)


@pytest.fixture
def pool(local_host):
    pool = Pool.objects.create(host=local_host, name="tank", guid="1", state="ONLINE", size=100 * GIB,
                               allocated=40 * GIB, free=60 * GIB, capacity=40, observed_at=NOW)  # fmt: skip
    Dataset.objects.create(host=local_host, pool=pool, name="tank", type="filesystem", used=40 * GIB,
                           available=56 * GIB, observed_at=NOW)  # fmt: skip
    Dataset.objects.create(host=local_host, pool=pool, name="tank/docs", type="filesystem", used=30 * GIB,
                           available=56 * GIB, observed_at=NOW)  # fmt: skip
    return pool


def history(host, days=10, per_day=GIB, start=20 * GIB, total=100 * GIB, dataset="", copy=0):
    """Hourly points of the pool (or a dataset) growing per_day, ending an hour ago; copy: bytes copied in at once
    halfway."""
    hours = days * 24
    CapacityPoint.objects.bulk_create(
        CapacityPoint(host=host, pool="tank", dataset=dataset, at=NOW - timedelta(hours=hours - h),
                      used=start + per_day * h // 24 + (copy if h >= hours // 2 else 0), total=total)
        for h in range(hours)
    )  # fmt: skip


def test_points_are_recorded_from_the_inventory_at_most_an_hour_apart(local_host, pool):
    assert services.capacity_record(host=local_host) == 3
    got = {(p.dataset, p.used, p.total) for p in CapacityPoint.objects.all()}
    assert got == {("", 40 * GIB, 100 * GIB), ("tank", 40 * GIB, 96 * GIB), ("tank/docs", 30 * GIB, 86 * GIB)}
    Pool.objects.update(observed_at=NOW + timedelta(minutes=30), allocated=41 * GIB)
    assert services.capacity_record(host=local_host) == 0, "the inventory read again within the hour: no new point"
    Pool.objects.update(observed_at=NOW + timedelta(minutes=61))
    assert services.capacity_record(host=local_host) == 1
    assert CapacityPoint.objects.filter(dataset="").latest("at").used == 41 * GIB


def test_a_pool_growing_a_gib_a_day_is_forecast_and_one_copy_does_not_change_it(local_host, pool):
    history(local_host, copy=10 * GIB)  # 20 → 30 GiB over 10 days, of 100, and 10 GiB copied in 5 days ago
    [row] = [f for f in services.capacity_forecast(host=local_host, now=NOW) if not f.dataset]
    assert row.state == "growing" and row.jumps == 1
    assert row.per_day == pytest.approx(GIB, rel=0.02)
    hour = 1 / 24  # the last point is an hour old: the days count from now
    assert row.days_80 == pytest.approx((80 * GIB - row.used) / row.per_day - hour, rel=1e-6)
    assert row.days_100 == pytest.approx((100 * GIB - row.used) / row.per_day - hour, rel=1e-6)
    assert row.used > 39 * GIB, "what the copy added counts as used (30 GiB without it)"
    assert row.soonest <= row.days_100 <= row.latest
    assert Forecast.objects.get(host=local_host, dataset="").pk == row.pk


def test_what_a_schedules_retention_will_free_comes_off_on_its_day(local_host, pool):
    history(local_host)
    before = services.capacity_forecast(host=local_host, now=NOW)[0].days_100
    task = SnapshotTask.objects.create(host=local_host, dataset="tank/docs", keep_days=7)
    docs = Dataset.objects.get(name="tank/docs")
    for day, name in ((1, "auto-a"), (3, "auto-b")):  # made 1 and 3 days ago: they go in 6 and 4 days
        Snapshot.objects.create(dataset=docs, name=name, used=5 * GIB, created_at=NOW - timedelta(days=day))
    Snapshot.objects.create(dataset=docs, name="manual", used=50 * GIB, created_at=NOW - timedelta(days=30))
    after = services.capacity_forecast(host=local_host, now=NOW)[0]
    assert after.freed == 10 * GIB, "only the schedule's own snapshots, by its prefix"
    assert after.days_100 == pytest.approx(before + 10, abs=0.2), "10 GiB freed: ten more days at a GiB a day"
    task.delete()


def test_two_days_of_history_are_needed_and_a_shrinking_pool_is_flat(local_host, pool):
    history(local_host, days=1)
    row = services.capacity_forecast(host=local_host, now=NOW)[0]
    assert row.state == "learning" and row.days_100 is None
    CapacityPoint.objects.all().delete()
    history(local_host, per_day=-GIB, start=50 * GIB)
    row = services.capacity_forecast(host=local_host, now=NOW)[0]
    assert row.state == "flat" and row.days_100 is None


def test_a_pool_forecast_full_within_the_rules_days_raises_the_alert_and_it_clears(local_host, pool):
    history(local_host, per_day=3 * GIB)  # 20 → 50 GiB: full in about 17 days
    services.capacity_forecast(host=local_host, now=NOW)
    alerts_evaluate(host=local_host)
    alert = Alert.objects.get(rule="capacity_forecast_full", subject="pool tank")
    assert "forecast full in 17 days" in alert.message and alert.cleared_at is None, alert.message
    CapacityPoint.objects.all().delete()
    history(local_host, per_day=GIB // 10)
    services.capacity_forecast(host=local_host, now=NOW)
    alerts_evaluate(host=local_host)
    alert.refresh_from_db()
    assert alert.cleared_at is not None


def test_the_pool_page_the_list_and_the_detail_show_the_forecast(local_host, pool, viewer_client):
    history(local_host, per_day=2 * GIB)
    history(local_host, per_day=GIB // 2, start=10 * GIB, total=50 * GIB, dataset="tank/docs")
    services.capacity_forecast(host=local_host, now=NOW)
    page = viewer_client.get(f"/pools/{pool.pk}/").content.decode()
    assert 'id="pool-forecast"' in page and "Growing 2.0\xa0GB a day" in page and "forecast-data" in page
    assert "tank/docs" in page.split('id="forecast-datasets"')[1]
    listing = viewer_client.get("/capacity/?kind=datasets").content.decode()
    assert "tank/docs" in listing and "Forecast now" not in listing, "a viewer reads; it does not forecast"
    row = Forecast.objects.get(dataset="tank/docs")
    detail = viewer_client.get(f"/capacity/{row.pk}/").content.decode()
    assert "Early bound" in detail and "Late bound" in detail
    assert viewer_client.post("/capacity/update/").status_code == 403


def test_the_dashboard_names_a_pool_full_within_90_days_only(local_host, pool, viewer_client):
    history(local_host, per_day=GIB // 20)  # 1,500 days away
    services.capacity_forecast(host=local_host, now=NOW)
    assert "forecast-panel" not in viewer_client.get("/").content.decode()
    CapacityPoint.objects.all().delete()
    history(local_host, per_day=2 * GIB)
    services.capacity_forecast(host=local_host, now=NOW)
    assert "forecast-panel" in viewer_client.get("/").content.decode()


def test_the_api_lists_forecasts_their_series_and_forecasts_now(local_host, pool, operator_client, viewer_client):
    history(local_host)
    got = operator_client.post(
        "/api/v1/capacity-forecasts/refresh/", {"host": "local"}, content_type="application/json"
    )
    assert got.status_code == 200 and {r["dataset"] for r in got.json()} == {"", "tank", "tank/docs"}
    listed = viewer_client.get("/api/v1/capacity-forecasts/?host=local&kind=pools").json()
    assert [r["pool"] for r in listed["results"]] == ["tank"] and listed["results"][0]["state"] == "growing"
    series = viewer_client.get(f"/api/v1/capacity-forecasts/{listed['results'][0]['id']}/series/?days=1").json()
    assert 24 <= len(series) <= 25 and series[0]["at"] < series[-1]["at"]
    bad = viewer_client.get(f"/api/v1/capacity-forecasts/{listed['results'][0]['id']}/series/?days=400")
    assert bad.status_code == 400 and "days" in bad.json()
    refused = operator_client.post(
        "/api/v1/capacity-forecasts/refresh/", {"host": "nope"}, content_type="application/json"
    )
    assert refused.status_code == 400 and "host" in refused.json()
