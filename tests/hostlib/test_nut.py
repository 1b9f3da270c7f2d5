"""hostlib.nut's logic: UPS names and values refused with their field named; NUT's files for a primary serving
secondaries, a secondary, and each shutdown policy; upsc's answer read (its format from NUT 2.8's upsc)."""

import pytest

from hostlib import nut, ups_shutdown_helper
from hostlib.errors import NotFound, ToolMissing
from hostlib.nut import InvalidUps, Ups
from tests.support.runners import FakeHost

PASSWORD, OTHER = "p" * 20, "s" * 20


@pytest.mark.parametrize("name", ["my ups", "ups.1", "ups@nas", "", "default", "DEFAULT", "x" * 33])
def test_names_nut_would_skip_or_misread_are_refused(name):
    with pytest.raises(InvalidUps) as refused:
        nut.ups_name(name)
    assert refused.value.field == "name"


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"driver": "made-up"}, "driver"),
        ({"port": "/dev/tty S0"}, "port"),
        ({"policy": "after_seconds", "seconds": 5}, "seconds"),
        ({"policy": "sometimes"}, "policy"),
        ({"password": "short"}, "password"),
        ({"listen": ("10.0.0.1; rm",)}, "listen"),
        ({"mode": "netclient", "server": "nas one"}, "server"),
    ],
)
def test_bad_values_name_their_field(change, field):
    ups = Ups(**{"name": "rack", "mode": "local", "password": PASSWORD, "driver": "usbhid-ups", "port": "auto",
                 **change})  # fmt: skip
    with pytest.raises(InvalidUps) as refused:
        ups.check()
    assert refused.value.field == field


def test_a_primary_serving_two_secondaries_at_a_runtime_floor():
    files = nut.render(Ups("rack", "local", PASSWORD, driver="usbhid-ups", port="auto", listen=("10.77.0.2",),
                           secondary_password=OTHER, policy="runtime", seconds=300))  # fmt: skip
    assert files["nut.conf"] == "MODE=netserver\n"
    assert "[rack]\n  driver = usbhid-ups\n  port = auto\n  ignorelb\n  override.battery.runtime.low = 300" in files[
        "ups.conf"]  # fmt: skip
    assert files["upsd.conf"] == "LISTEN 127.0.0.1 3493\nLISTEN 10.77.0.2 3493\n"
    assert "upsmon primary" in files["upsd.users"] and f"password = {OTHER}\n  upsmon secondary" in files["upsd.users"]
    assert f"MONITOR rack@localhost 1 tarn-primary {PASSWORD} primary" in files["upsmon.conf"]
    assert f'SHUTDOWNCMD "{nut.SHUTDOWN}"' in files["upsmon.conf"] and "POWERDOWNFLAG" in files["upsmon.conf"]
    assert "upssched.conf" not in files


def test_a_secondary_after_two_minutes_on_battery():
    files = nut.render(Ups("rack", "netclient", OTHER, server="10.77.0.2", policy="after_seconds", seconds=120))
    assert files["nut.conf"] == "MODE=netclient\n" and "ups.conf" not in files and "upsd.users" not in files
    assert f"MONITOR rack@10.77.0.2 1 tarn-secondary {OTHER} secondary" in files["upsmon.conf"]
    assert "POWERDOWNFLAG" not in files["upsmon.conf"]  # only the primary asks the UPS to cut the power
    assert "AT ONBATT * START-TIMER onbatt 120\nAT ONLINE * CANCEL-TIMER onbatt" in files["upssched.conf"]
    assert "NOTIFYCMD /sbin/upssched" in files["upsmon.conf"]


UPSC = """battery.charge: 100
battery.runtime: 1800
device.mfr: Dummy Manufacturer
driver.name: dummy-ups
ups.load: 25
ups.status: OB LB
"""


def test_upsc_is_read():
    found = nut.parse_upsc(UPSC)
    assert (found.status, found.charge, found.runtime, found.load) == (["OB", "LB"], 100.0, 1800.0, 25.0)
    assert found.shown == "on battery, low battery"
    assert nut.parse_upsc("ups.status: OL\nbattery.charge: x\n").charge is None


def test_apply_writes_nuts_files_for_its_group_and_restarts_what_reads_them():
    fake = FakeHost().answer("which", stdout="/usr/bin/upsc\n/usr/sbin/upsmon\n")
    ups = Ups("rack", "local", PASSWORD, driver="dummy-ups", port="auto", sim="rack.dev")
    changed = nut.apply(fake.transport(), ups)
    assert sorted(changed) == ["nut.conf", "ups.conf", "upsd.conf", "upsd.users", "upsmon.conf"]
    assert {fake.groups[f"{nut.NUT}/{name}"] for name in changed} == {"nut"}
    assert "  port = rack.dev" in fake.files[f"{nut.NUT}/ups.conf"]
    assert fake.files[nut.SHUTDOWN].startswith('#!/usr/bin/python3 -IS\n"""tarn-ups-shutdown')  # upsmon runs it
    assert ["systemctl", "restart", "--", *nut.UNITS_LOCAL] in fake.argvs
    fake.reset()
    assert nut.apply(fake.transport(), ups) == [] and not any(a[:2] == ["systemctl", "restart"] for a in fake.argvs)


def test_nut_not_installed_is_a_typed_error_and_nothing_is_written():
    fake = FakeHost().answer("which", stdout="", returncode=1)
    with pytest.raises(ToolMissing, match="nut is not installed"):
        nut.apply(fake.transport(), Ups("rack", "netclient", OTHER, server="10.77.0.2"))
    assert fake.writes == []


def test_an_unplugged_ups_is_nuts_words():
    fake = FakeHost().answer("upsc", returncode=1, stderr="Init SSL without certificate database\nError: Data stale\n")
    with pytest.raises(NotFound, match="Error: Data stale"):
        nut.read(fake.transport(), "rack")


def test_the_shutdown_program_stops_clients_exports_then_powers_off(capsys):
    assert ups_shutdown_helper.main(["--dry-run"]) == 0
    said = capsys.readouterr().out.splitlines()
    assert said == ["tarn-ups-shutdown: systemctl stop smbd nmbd nfs-server", "tarn-ups-shutdown: zpool export -a",
                    "tarn-ups-shutdown: systemctl poweroff"]  # fmt: skip
