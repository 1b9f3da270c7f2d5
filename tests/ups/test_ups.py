"""The UPS through Tarn's services, runner, reads, alerts and page on a fake host: refusals name their field and
save nothing; applying writes NUT's files for the NAS's side; a NAS served by another of Tarn's takes its
secondary password sealed as it is; a reading is kept and drawn; on battery, low battery and contact lost become
alerts; a shutdown delay longer than the battery lasts is said on the page; only an admin changes it."""

import json

import pytest
from django.core.exceptions import ValidationError

from analytics.models import Alert
from analytics.services import alerts_evaluate
from appliance.checks import sealed
from appliance.models import Host, Operation
from hostlib import nut
from tests.support.runners import FakeHost
from ups import services
from ups.models import Reading, Ups

UPSC_OL = "battery.charge: 100\nbattery.runtime: 1800\nups.load: 20\nups.status: OL\n"
UPSC_LB = "battery.charge: 8\nbattery.runtime: 90\nups.load: 20\nups.status: OB LB\n"


@pytest.fixture
def fake(monkeypatch):
    return (
        FakeHost()
        .answer("which", stdout="/usr/bin/upsc\n/usr/sbin/upsmon\n")
        .answer("upsc", stdout=UPSC_OL)
        .install(monkeypatch)
    )


def test_a_primary_serving_others_is_configured_and_read(local_host, admin_user, fake, run_queued):
    op = run_queued(services.ups_save_start, host=local_host, user=admin_user, name="rack", driver="usbhid-ups",
                    port="auto", listen="10.77.0.2")  # fmt: skip
    assert op.status == "succeeded", op.message
    row = Ups.objects.get()
    assert row.password and row.secondary_password and "upsmon" not in row.password  # sealed, not text
    users = fake.files[f"{nut.NUT}/upsd.users"]
    assert "upsmon primary" in users and "upsmon secondary" in users
    assert fake.groups[f"{nut.NUT}/upsd.users"] == "nut"
    assert (row.status, row.charge, row.runtime) == (["OL"], 100.0, 1800.0) and Reading.objects.count() == 1
    everything = json.dumps(list(Operation.objects.values_list("params", "message")))
    assert row.password not in everything and "password =" not in everything


def test_a_secondary_of_another_tarn_nas_takes_its_sealed_password(local_host, admin_user, fake, run_queued):
    primary_host = Host.objects.create(name="nas2", transport="local", address="10.77.0.2")
    primary = Ups.objects.create(host=primary_host, name="rack", mode="local", driver="usbhid-ups", port="auto",
                                 listen="10.77.0.2", password="sealed-1", secondary_password=sealed("s" * 20, "x"))  # fmt: skip
    op = run_queued(services.ups_save_start, host=local_host, user=admin_user, name="rack", mode="netclient",
                    server_host=primary_host, policy="after_seconds", seconds=120)  # fmt: skip
    assert op.status == "succeeded", op.message
    row = Ups.objects.get(host=local_host)
    assert row.password == primary.secondary_password and row.server == "10.77.0.2"
    monitor = fake.files[f"{nut.NUT}/upsmon.conf"]
    assert f"MONITOR rack@10.77.0.2 1 tarn-secondary {'s' * 20} secondary" in monitor
    assert "START-TIMER onbatt 120" in fake.files[f"{nut.NUT}/upssched.conf"]


@pytest.mark.parametrize(
    ("given", "field"),
    [
        ({"name": "my ups"}, "name"),
        ({"name": "default"}, "name"),
        ({"driver": "made-up"}, "driver"),
        ({"policy": "after_seconds", "seconds": 10}, "seconds"),
        ({"mode": "netclient", "server": "10.77.0.2"}, "password"),
        ({"mode": "netclient", "server": "nas one", "password": "p" * 20}, "server"),
    ],
)
def test_bad_input_names_its_field_and_saves_nothing(local_host, admin_user, fake, given, field):
    kwargs = {"name": "rack", "driver": "usbhid-ups", "port": "auto", **given}
    with pytest.raises(ValidationError) as refused:
        services.ups_save_start(host=local_host, user=admin_user, **kwargs)
    assert field in refused.value.message_dict
    assert not Ups.objects.exists() and not Operation.objects.exists() and fake.writes == []


def test_on_battery_low_battery_and_lost_contact_are_alerts(local_host, admin_user, fake):
    Ups.objects.create(host=local_host, name="rack", password="x")
    fake.answer("upsc", stdout=UPSC_LB)
    services.ups_read(host=local_host)
    alerts_evaluate(host=local_host, deliver=lambda *a, **k: None)
    assert set(Alert.objects.filter(cleared_at__isnull=True).values_list("rule", flat=True)) >= {
        "ups_on_battery", "ups_low_battery"}  # fmt: skip
    fake.answer("upsc", returncode=1, stderr="Error: Data stale\n")
    services.ups_read(host=local_host)
    alerts_evaluate(host=local_host, deliver=lambda *a, **k: None)
    open_ = set(Alert.objects.filter(cleared_at__isnull=True).values_list("rule", flat=True))
    assert "ups_comm_lost" in open_ and "ups_on_battery" not in open_
    assert Ups.objects.get().error.endswith("Error: Data stale")


def test_the_page_warns_of_a_delay_longer_than_the_battery_and_a_viewer_cannot_change(
    local_host, admin_client, viewer_client
):
    Ups.objects.create(host=local_host, name="rack", password="x", policy="after_seconds", seconds=600, runtime=300,
                       status=["OB"], charge=50)  # fmt: skip
    page = admin_client.get("/ups/").content.decode()
    assert 'id="ups-warning"' in page and "600 s on battery" in page
    assert viewer_client.post("/ups/save/", {"name": "x"}).status_code == 403


def test_with_no_ups_the_page_says_what_to_do_and_opens_the_form(local_host, admin_client, viewer_client):
    page = admin_client.get("/ups/").content.decode()
    assert "No UPS is watched" in page and 'id="ups-box" open' in page
    assert viewer_client.get("/ups/").status_code == 200
