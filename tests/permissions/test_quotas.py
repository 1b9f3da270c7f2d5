"""Quotas over a FakeHost answering with what OpenZFS printed in the lab (tests/fixtures/host/permissions): the read
into Tarn's copy (updated in place, gone rows removed, a day's point per account), a quota set by id and cleared,
refusals on their field with nothing started, the report page, its CSV and chart, the alerts at 80/90/100 %, and the
API. The lab proves the effects (tests/lab/test_permissions.py)."""

import csv
import io
import json

import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone

from analytics.models import Alert
from analytics.services import alerts_evaluate
from appliance.models import Host, Operation
from permissions import services
from permissions.models import QuotaPoint, QuotaReading, QuotaUse
from pools.models import Dataset, Pool
from tests.hostlib.test_quotas import captured
from tests.support.runners import FakeHost


@pytest.fixture
def host(db):
    host = Host.objects.create(name="nas1", address="10.0.0.5")
    now = timezone.now()
    pool = Pool.objects.create(host=host, name="tank", observed_at=now)
    Dataset.objects.create(
        host=host, pool=pool, name="tank/office", type="filesystem", mountpoint="/tank/office", observed_at=now
    )
    return host


@pytest.fixture
def fake(monkeypatch):
    fake = FakeHost()
    for kind in ("user", "group", "project"):
        fake.answer("zfs", f"{kind}space", stdout=captured(f"{kind}space.txt"))
    fake.answer(
        "python3", stdout=json.dumps({"users": {"carol": [3001, "carol"]}, "groups": {"officers": [3100, "officers"]}})
    )
    return fake.install(monkeypatch)


def test_a_read_fills_tarns_copy_and_a_point_per_account(host, fake, admin_user, run_queued):
    op = run_queued(services.quotas_read_start, host=host, user=admin_user)
    assert op.status == "succeeded", op.message
    carol = QuotaUse.objects.get(host=host, kind="user", name="carol")
    assert (carol.used, carol.quota, carol.objquota, carol.dataset) == (1024, 10 << 20, 100, "tank/office")
    assert carol.percent == pytest.approx(0.0, abs=0.1)
    assert QuotaUse.objects.filter(host=host).count() == 6
    assert QuotaPoint.objects.filter(host=host, kind="project", name="42").get().used == 1024
    assert QuotaReading.objects.get(host=host).datasets == 1
    assert all(c.argv[0] == "zfs" and not c.mutating for c in fake.calls)
    fake.answer("zfs", "userspace", stdout="POSIX User\tcarol\t2048\t10485760\t3\t100\n")  # root gone, carol grew
    run_queued(services.quotas_read_start, host=host, user=admin_user)
    assert QuotaUse.objects.get(pk=carol.pk).used == 2048  # the same row, updated in place
    assert not QuotaUse.objects.filter(host=host, kind="user", name="root").exists()
    assert QuotaPoint.objects.filter(host=host, kind="user", name="carol").count() == 1  # one point a day


def test_a_quota_is_set_by_id_and_a_quota_below_use_says_so(host, fake, admin_user, run_queued):
    run_queued(services.quotas_read_start, host=host, user=admin_user)
    QuotaUse.objects.filter(name="carol").update(used=12 << 20)
    op = run_queued(
        services.quota_set_start,
        host=host,
        user=admin_user,
        dataset="tank/office",
        kind="user",
        name="carol",
        quota="5M",
    )
    assert op.status == "succeeded", op.message
    assert ["zfs", "set", "userquota@3001=5242880", "userobjquota@3001=none", "--", "tank/office"] in fake.mutations
    assert "EDQUOT" in op.message and "until" in op.message
    op = run_queued(
        services.quota_set_start, host=host, user=admin_user, dataset="tank/office", kind="project", name="42"
    )
    assert ["zfs", "set", "projectquota@42=none", "projectobjquota@42=none", "--", "tank/office"] in fake.mutations
    assert "cleared" in op.message


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"quota": "0"}, "quota"),
        ({"quota": "-5G"}, "quota"),
        ({"quota": "1.5T"}, "quota"),
        ({"quota": "１５００"}, "quota"),
        ({"quota": str(1 << 64)}, "quota"),
        ({"objquota": "-1"}, "objquota"),
        ({"name": "no-such-user-x"}, "name"),
        ({"name": "4000000"}, "name"),
        ({"name": "a:b"}, "name"),
        ({"name": "-rf"}, "name"),
        ({"kind": "project", "name": "0"}, "name"),
        ({"dataset": "tank/nope"}, "dataset"),
        ({"kind": "everyone"}, "kind"),
    ],
)
def test_bad_quotas_are_refused_on_their_field_and_nothing_starts(host, fake, admin_user, change, field):
    fake.answer("python3", stdout=json.dumps({"users": {"carol": [3001, "carol"]}, "groups": {}}))
    args = {"dataset": "tank/office", "kind": "user", "name": "carol", "quota": "5G", **change}
    with pytest.raises(ValidationError) as refused:
        services.quota_set_start(host=host, user=admin_user, **args)
    assert field in refused.value.message_dict
    assert not Operation.objects.exists() and not fake.mutations


def test_the_alerts_rise_at_80_90_and_100_percent_once_per_account(host, fake, admin_user, run_queued):
    run_queued(services.quotas_read_start, host=host, user=admin_user)
    for name, used in (("carol", 9 << 20), ("root", 0)):
        QuotaUse.objects.filter(kind="user", name=name).update(used=used, percent=90.0 if name == "carol" else -1.0)
    QuotaUse.objects.filter(kind="group", name="officers").update(percent=100.0, used=50 << 20)
    alerts_evaluate(host=host)
    raised = {
        (a.rule, a.subject) for a in Alert.objects.filter(host=host, cleared_at__isnull=True, rule__startswith="quota")
    }
    assert raised == {("quota_high", "user carol on tank/office"), ("quota_full", "group officers on tank/office")}
    QuotaUse.objects.filter(kind="user", name="carol").update(percent=10.0)
    alerts_evaluate(host=host)
    assert not Alert.objects.filter(rule="quota_high", cleared_at__isnull=True).exists()


def test_the_report_page_csv_and_chart(host, fake, admin_user, admin_client, run_queued):
    run_queued(services.quotas_read_start, host=host, user=admin_user)
    QuotaUse.objects.filter(name="root", kind="user").update(name="=HYPERLINK(1)")
    session = admin_client.session
    session["host_id"] = host.pk
    session.save()
    html = admin_client.get("/permissions/quotas/", {"kind": "user"}).content.decode()
    assert "carol" in html and "officers" not in html and 'id="quota-csv"' in html
    rows = list(
        csv.reader(io.StringIO(b"".join(admin_client.get("/permissions/quotas.csv").streaming_content).decode()))
    )
    assert rows[0][:4] == ["host", "dataset", "kind", "name"] and len(rows) == 7
    assert ["nas1", "tank/office", "user", "carol", "1024", "10485760"] == rows[[r[3] for r in rows].index("carol")][:6]
    assert "'=HYPERLINK(1)" in [r[3] for r in rows]  # never a formula in a spreadsheet
    page = admin_client.get("/permissions/quotas/", {"account": "user:carol"}).content.decode()
    assert 'id="quota-data"' in page and "GiB" in page


def test_the_api_lists_the_fullest_first_and_sets_as_an_admin_only(
    host, fake, admin_user, operator_client, admin_client, run_queued
):
    run_queued(services.quotas_read_start, host=host, user=admin_user)
    QuotaUse.objects.filter(kind="group", name="officers").update(percent=95.0)
    listed = admin_client.get("/api/v1/quota-uses/", {"host": "nas1"}).json()
    assert listed["results"][0]["name"] == "officers"
    body = {"host": "nas1", "dataset": "tank/office", "kind": "user", "name": "carol", "quota": "1G"}
    assert operator_client.post("/api/v1/quota-uses/set/", body, content_type="application/json").status_code == 403
    response = admin_client.post("/api/v1/quota-uses/set/", {**body, "quota": "1.5T"}, content_type="application/json")
    assert response.status_code == 400 and "quota" in response.json()


def test_a_bad_quota_on_the_page_is_said_under_its_field_and_the_form_stays_open(host, fake, admin_client):
    session = admin_client.session
    session["host_id"] = host.pk
    session.save()
    body = {"dataset": "tank/office", "kind": "user", "name": "carol", "quota": "1.5T", "objquota": ""}
    page = admin_client.post("/permissions/quotas/set/", body)
    html = page.content.decode()
    assert page.status_code == 400 and 'id="id_quota_error"' in html
    assert 'id="quota-set-box" open' in html and 'value="1.5T"' in html
    assert not Operation.objects.exists()
