"""The fleet page (issue 46): a row per host, a column per app, worst first when sorted, searched by name, the hosts
needing attention alone; the queries do not grow with the hosts; a viewer sees no admin column."""

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from analytics.models import Alert
from appliance.models import Host, Operation
from capacity.models import Forecast
from health.models import DiskHealth
from pools.models import Pool
from replication.models import Pair, Task
from tests.replication.test_services import ended_run
from updates.models import HostUpdates


def hosts(n: int) -> list[Host]:
    Host.objects.filter(name="local").delete()  # the migration's row for this machine
    now = timezone.now()
    made = [Host.objects.create(name=f"nas{i:02d}", address=f"192.0.2.{i}", observed_at=now) for i in range(n)]
    for i, host in enumerate(made):
        Pool.objects.create(host=host, name="tank", guid=str(i), state="ONLINE", capacity=10 + i, observed_at=now)
        DiskHealth.objects.create(host=host, device="/dev/sda", name="sda", state="ok")
    return made


@pytest.fixture
def fleet(db, settings):
    settings.TARN_DASHBOARD_SECONDS = 0
    made = hosts(3)
    a, b, c = made
    Pool.objects.filter(host=b).update(state="DEGRADED", capacity=95)
    DiskHealth.objects.filter(host=c).update(state="failing")
    Alert.objects.create(host=c, rule="pool_health", subject="tank", level="critical", message="tank is DEGRADED")
    Host.objects.filter(pk=a.pk).update(facts_error="ssh: connect to host 192.0.2.0 port 22: No route to host")
    return made


def rows(page: str) -> list[str]:
    body = page.split("<tbody>")[1].split("</tbody>")[0]
    return [part.split("</a>")[0].rsplit(">", 1)[-1] for part in body.split('<td><a href="/hosts/')[1:]]


def test_each_host_shows_what_each_app_says_of_it(fleet, viewer_client):
    page = viewer_client.get("/fleet/").content.decode()
    assert rows(page) == ["nas00", "nas01", "nas02"]
    assert "not answering" in page and "No route to host" in page  # its error on hover
    assert "1 pool, tank DEGRADED" in page and '<td class="cell-bad">95 % (tank)</td>' in page
    assert "1 failing" in page and "1 critical" in page and "none open" in page
    assert "Updates" not in page.split("<tbody>")[0]  # an admin's column: its page is an admin's


def test_sorting_puts_the_worst_first_and_search_and_attention_narrow_it(fleet, viewer_client, admin_client):
    assert rows(viewer_client.get("/fleet/?order=capacity").content.decode())[0] == "nas01"  # 95 % first
    assert rows(viewer_client.get("/fleet/?order=-capacity").content.decode())[0] == "nas00"
    assert rows(viewer_client.get("/fleet/?order=alerts").content.decode())[0] == "nas02"
    assert rows(viewer_client.get("/fleet/?q=NAS01").content.decode()) == ["nas01"]
    assert "No host matches “zz”" in viewer_client.get("/fleet/?q=zz").content.decode()
    Host.objects.filter(name="nas00").update(facts_error="")
    Pool.objects.filter(host__name="nas00").update(capacity=5)
    assert rows(viewer_client.get("/fleet/?attention=1").content.decode()) == ["nas01", "nas02"]
    assert "Updates" in admin_client.get("/fleet/").content.decode().split("<tbody>")[0]
    assert viewer_client.get("/fleet/?order=<script>&page=x").status_code == 200  # junk is ignored, not a 500


def test_the_page_asks_the_same_queries_for_5_hosts_or_60_and_pages_them(db, settings, viewer_client):
    settings.TARN_DASHBOARD_SECONDS = 0
    hosts(5)
    viewer_client.get("/fleet/")
    with CaptureQueriesContext(connection) as few:
        viewer_client.get("/fleet/")
    hosts_more = [Host.objects.create(name=f"big{i:02d}", address=f"198.51.100.{i}") for i in range(55)]
    assert hosts_more
    with CaptureQueriesContext(connection) as many:
        page = viewer_client.get("/fleet/").content.decode()
    assert len(many.captured_queries) == len(few.captured_queries)
    assert len(rows(page)) == 50 and "Page 1 of 2 (60)" in page


def test_with_no_host_the_page_says_what_to_do(db, viewer_client):
    Host.objects.all().delete()
    assert "No host yet" in viewer_client.get("/fleet/").content.decode()


def test_past_a_dozen_hosts_the_switcher_is_a_search_by_name(db, viewer_client):
    made = hosts(13)
    page = viewer_client.get("/pools/").content.decode()
    assert '<datalist id="tarn-hosts">' in page and '<select name="host"' not in page
    assert page.count('<option value="nas') == 13
    response = viewer_client.post("/hosts/switch/", {"host_name": "nas07", "next": "/pools/"})
    assert response.status_code == 302 and response["Location"] == "/pools/"
    assert viewer_client.session["host_id"] == made[7].pk
    response = viewer_client.post("/hosts/switch/", {"host_name": "nas99", "next": "/pools/"}, follow=True)
    assert "No host is named nas99" in response.content.decode() and viewer_client.session["host_id"] == made[7].pk


def test_a_dozen_hosts_or_fewer_keep_the_menu(db, viewer_client):
    hosts(3)
    page = viewer_client.get("/pools/").content.decode()
    assert '<select name="host"' in page and "tarn-hosts" not in page


def test_replication_lag_updates_and_forecasts_have_their_cells(db, settings, admin_client):
    settings.TARN_DASHBOARD_SECONDS = 0
    a, b, c = hosts(3)
    pair = Pair.objects.create(source=a, target=b, address="10.78.0.2", root="backup/lab", status="paired")
    task = Task.objects.create(pair=pair, source_dataset="tank/docs", target_name="docs")
    good = ended_run(task, "succeeded")
    Operation.objects.filter(pk=good.operation_id).update(finished_at=timezone.now() - timedelta(hours=30))
    HostUpdates.objects.create(host=b, pending=[{"name": "openssl", "security": True}, {"name": "vim"}], reboot=True)
    now = timezone.now()
    Forecast.objects.create(host=c, pool="tank", state="growing", computed_at=now, used=1, total=2, days_100=12)
    page = admin_client.get("/fleet/").content.decode()
    assert '<td class="cell-warn"><a href="/replication/">last sent 30 h ago</a></td>' in page  # past a day: late
    assert "2 pending, 1 security, reboot asked" in page
    assert '<td class="cell-bad">tank full in 12 d</td>' in page
    ended_run(task, "failed")
    assert "1 failing, last sent 30 h ago" in admin_client.get("/fleet/").content.decode()


def test_the_api_gives_the_same_rows_filtered_and_sorted(fleet, viewer_client):
    answer = viewer_client.get("/api/v1/fleet/?order=capacity&attention=1").json()
    assert [r["host"] for r in answer["results"]] == ["nas01", "nas02", "nas00"]  # 95, 12, 10 %
    first = answer["results"][0]
    assert first["attention"] and first["cells"]["capacity"] == {"text": "95 % (tank)", "level": "bad"}
    assert "updates" not in first["cells"]  # an admin's column
    assert [r["host"] for r in viewer_client.get("/api/v1/fleet/?q=nas02").json()["results"]] == ["nas02"]


def test_hosts_a_column_says_nothing_of_stay_last_both_ways_even_from_the_cache(db, settings, viewer_client):
    settings.TARN_DASHBOARD_SECONDS = 60  # the second request reads the rows back from the cache
    a, b, c = hosts(3)
    Pool.objects.filter(host=b).delete()  # nas01: no pool, nothing to say under "Fullest pool"
    for order in ("capacity", "-capacity", "-capacity"):
        assert rows(viewer_client.get(f"/fleet/?order={order}").content.decode())[-1] == "nas01", order
    assert rows(viewer_client.get("/fleet/?order=-name").content.decode()) == ["nas02", "nas01", "nas00"]


def test_the_pager_keeps_the_search_encoded(db, settings, viewer_client):
    settings.TARN_DASHBOARD_SECONDS = 0
    hosts(3)
    Host.objects.bulk_create([Host(name=f"big{i:02d}", address=f"198.51.100.{i}") for i in range(55)])
    page = viewer_client.get("/fleet/?q=big&order=-name").content.decode()
    assert 'href="?q=big&amp;order=-name&page=2"' in page or 'href="?q=big&order=-name&page=2"' in page
