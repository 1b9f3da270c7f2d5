"""In a real browser, against the lab guest with a real worker: plan base tuning, apply it; an MTU change with
its countdown, kept; a second one left alone, which the guest undoes by itself."""

import json
import time

import pytest
from django.utils import timezone

from tests.browser.conftest import login_on_lab, shot, wait_for_operation
from tuning.models import ChangeSet
from tuning.services import changes_settle

pytestmark = [pytest.mark.browser, pytest.mark.lab, pytest.mark.lane(1), pytest.mark.django_db(transaction=True)]


def mtu(guest, mac) -> int:
    links = json.loads(guest.sh("ip -j link"))
    return next(x["mtu"] for x in links if x.get("address") == mac)


def nic(guest) -> str:
    links = json.loads(guest.sh("ip -j link"))
    return next(x["ifname"] for x in links if x.get("address") == guest.env["LAB_DATA_MAC"])


def set_mtu(page, link: str, value: int, seconds: int) -> None:
    page.goto("/tuning/")
    form = page.locator("form[action*='links/mtu']")
    form.locator("select[name=link]").select_option(link)
    form.locator("input[name=mtu]").fill(str(value))
    form.locator("input[name=seconds]").fill(str(seconds))
    form.locator("button").click()
    page.wait_for_url("**/tuning/changes/*/")


def test_plan_apply_keep_and_a_change_left_to_roll_back(page, lab_worker, guest):
    login_on_lab(page)
    page.goto("/tuning/")
    page.click("text=Refresh links and values")
    wait_for_operation(page)
    page.goto("/tuning/")
    assert "enp0s17" in page.inner_text("#links") and "10.77.0.2/24" in page.inner_text("#links")
    shot(page, "tuning-01-links")

    page.check("input[name=profile][value=lan10g]")
    page.click("button:has-text('Plan base tuning')")
    page.wait_for_url("**/tuning/changes/*/")
    page.wait_for_selector("#change-status .badge-planned", timeout=120_000)
    plan = page.inner_text("#plan")
    assert "net.ipv4.tcp_wmem" in plan and "4096 16384 4194304" in plan and "will change" in plan
    shot(page, "tuning-02-plan")
    assert guest.sh("sysctl -n net.core.wmem_max").strip() == "212992", "the plan changed nothing"
    page.uncheck("input[name=measure]")
    page.click("#apply-form button")
    page.wait_for_selector("#change-status .badge-applied", timeout=120_000)
    assert guest.sh("sysctl -n net.core.wmem_max").strip() == "134217728"
    shot(page, "tuning-03-applied")

    mac = guest.env["LAB_DATA_MAC"]
    set_mtu(page, nic(guest), 4000, 120)
    page.wait_for_selector("#change-status .badge-pending", timeout=120_000)
    left = int(page.inner_text("[data-deadline]").split()[0])
    assert 30 < left <= 120, left  # the countdown runs in the page
    assert mtu(guest, mac) == 4000
    shot(page, "tuning-04-countdown")
    page.click("#keep")
    page.wait_for_selector("#change-status .badge-kept", timeout=120_000)
    assert mtu(guest, mac) == 4000 and "MTUBytes=4000" in guest.sh("cat /etc/systemd/network/05-tarn-*.network")
    shot(page, "tuning-05-kept")

    set_mtu(page, nic(guest), 3000, 20)  # this one nobody keeps
    page.wait_for_selector("#change-status .badge-pending", timeout=120_000)
    assert mtu(guest, mac) == 3000
    cs = ChangeSet.objects.get(title__startswith="MTU 3000")
    while mtu(guest, mac) != 4000:  # the guest's own timer puts the kept 4000 back
        assert timezone.now() < cs.deadline + timezone.timedelta(seconds=20), "the guest did not restore itself"
        time.sleep(1)
    time.sleep(max(0.0, (cs.deadline + timezone.timedelta(seconds=5.5) - timezone.now()).total_seconds()))
    changes_settle()  # what beat does every 10 s (it settles a change 5 s past its deadline)
    page.wait_for_selector("#change-status .badge-rolled_back", timeout=60_000)
    assert "put the original settings back" in page.inner_text("#change-status")
    shot(page, "tuning-06-rolled-back")
