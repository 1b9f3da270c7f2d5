"""Benchmark input a person types, read as an attacker would (issue 23): other scripts' digits are refused, never
a 500 and never read as numbers; a block size is whole 512-byte sectors up to 16m; a refused target is named back
exactly as it was sent."""

import pytest
from django_celery_beat.models import PeriodicTask

from appliance.models import Operation
from benchmarks.models import CustomProfile, Run, Schedule
from hostlib import fio
from shares.models import NfsExport, SmbShare
from tests.benchmarks.conftest import api, schedule_body


@pytest.mark.parametrize("runs", ["²", "٣", "１"])
def test_comparing_runs_named_in_other_digits_is_an_empty_comparison_not_a_500(operator_client, tank, runs):
    operator_client.raise_request_exception = False
    response = operator_client.get("/benchmarks/compare/", {"runs": [runs, "7"]})
    assert response.status_code == 200


@pytest.mark.parametrize("profile", ["custom-²", "custom-٣", "custom-１"])
def test_a_custom_profile_named_in_other_digits_is_a_400_naming_profile(operator_client, tank, profile):
    CustomProfile.objects.create(title="mine", based_on="seq-read-1", jobs=[], properties={})
    operator_client.raise_request_exception = False
    response = api(operator_client, "benchmark-runs/", {"host": "local", "profile": profile, "dataset": "tank/data"})
    assert response.status_code == 400 and "profile" in response.json(), response.content
    assert not Run.objects.exists() and not Operation.objects.exists()


@pytest.mark.parametrize(
    "cron",
    [{"minute": "０", "hour": "３"}, {"minute": "٣٠"}, {"hour": "²"}, {"day_of_week": "１-５"}, {"minute": "*/１５"}],
)
def test_cron_fields_in_other_digits_are_a_400_naming_the_field_and_nothing_is_scheduled(operator_client, tank, cron):
    response = api(operator_client, "benchmark-schedules/", schedule_body(**cron))
    assert response.status_code == 400, response.content
    assert set(cron) <= set(response.json()), response.json()
    assert not Schedule.objects.exists() and not PeriodicTask.objects.filter(task__startswith="benchmarks").exists()


def test_a_schedule_without_cron_fields_takes_the_defaults_not_a_500(operator_client, tank):
    body = {k: v for k, v in schedule_body().items() if k not in ("minute", "hour", "day_of_week")}
    response = api(operator_client, "benchmark-schedules/", body)
    assert response.status_code == 201, response.content
    assert (response.json()["minute"], response.json()["hour"], response.json()["day_of_week"]) == ("0", "3", "0")


def test_the_schedule_page_refuses_fullwidth_cron_fields_too(operator_client, tank):
    body = {**schedule_body(minute="０", hour="３"), "profiles": "seq-write-1", "dataset": "tank/data"}
    body["drop_percent"] = "10"
    page = operator_client.post("/benchmarks/schedules/", body, follow=True).content.decode()
    assert "digits 0-9, *, ranges" in page and not Schedule.objects.exists()


@pytest.mark.parametrize("bs", ["3", "1000", "513", "17m", "32m", "4k5", "４k", "0", "1g", "99999999"])
def test_a_block_size_that_is_not_whole_sectors_up_to_16m_is_a_400_naming_bs(admin_client, bs):
    body = {"based_on": "randread-4k", "title": "mine", "job": {"bs": bs}}
    response = api(admin_client, "benchmark-profiles/", body)
    assert response.status_code == 400 and "bs" in response.json(), response.content
    assert "multiple of 512" in response.json()["bs"][0]
    assert not CustomProfile.objects.exists()


@pytest.mark.parametrize("bs", ["512", "1536", "4k", "1k", "128k", "1m", "16m", "16384k"])
def test_block_sizes_of_whole_sectors_up_to_16m_are_taken(admin_client, bs):
    body = {"based_on": "randread-4k", "title": f"bs {bs}", "job": {"bs": bs}}
    response = api(admin_client, "benchmark-profiles/", body)
    assert response.status_code == 201, response.content
    assert response.json()["jobs"][0]["bs"] == bs


def test_the_block_size_check_is_fios_own_before_any_argv():
    job = fio.FioJob(name="x", rw="read", bs="3", size="1g")
    assert "bs" in fio.problems(job)
    with pytest.raises(ValueError):
        fio.argv(job, "/tank/x", output="/tank/x/o.json", bw_log="/tank/x/bw")


def test_a_title_in_another_script_gives_an_ascii_job_name(admin_client):
    response = api(admin_client, "benchmark-profiles/", {"based_on": "randread-4k", "title": "Prüfung ٣ 4k"})
    assert response.status_code == 201, response.content
    assert fio.NAME.fullmatch(response.json()["jobs"][0]["name"])


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("benchmark-runs/", {"profile": "seq-read-1", "dataset": "/etc/passwd"}, "dataset"),
        ("benchmark-suites/", {"profiles": ["seq-read-1"], "dataset": "/etc/passwd"}, "dataset"),
        ("benchmark-runs/share/", {"profile": "seq-read-1", "protocol": "nfs", "share": "/etc/passwd"}, "share"),
        ("benchmark-runs/share/", {"profile": "seq-read-1", "protocol": "smb", "share": "/etc/passwd"}, "share"),
        ("benchmark-schedules/", schedule_body(target="/etc/passwd"), "target"),
    ],
)
def test_a_refused_target_is_named_back_exactly_as_sent(operator_client, tank, path, body, field):
    response = api(operator_client, path, {"host": "local", **body})
    assert response.status_code == 400, response.content
    assert "/etc/passwd" in response.json()[field][0], response.json()
    assert not Run.objects.exists() and not SmbShare.objects.exists() and not NfsExport.objects.exists()


def test_a_refused_target_on_the_page_is_named_back_exactly_as_sent(operator_client, tank):
    page = operator_client.post(
        "/benchmarks/", {"start": "run", "profile": "seq-read-1", "target": "dataset:/etc/passwd"}, follow=True
    )
    assert "dataset:/etc/passwd is not one of the available choices" in page.content.decode()
    assert not Run.objects.exists()


@pytest.mark.parametrize("address", ["fe80::1%eth1", "fe80::1%25eth1", "fe80::1%1"])
def test_an_ipv6_zone_in_the_iperf_address_is_a_400_not_dropped(operator_client, tank, address):
    body = {"host": "local", "profile": "iperf-1", "peer": "local", "address": address}
    response = api(operator_client, "benchmark-runs/network/", body)
    assert response.status_code == 400 and "address" in response.json(), response.content
    assert "zone" in response.json()["address"][0]
    assert not Run.objects.exists() and not Operation.objects.exists()
