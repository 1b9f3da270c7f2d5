"""In a real browser, against the lab's real disks, with a real worker: an operator reads the disks, opens a SATA
disk's page (attributes, temperature chart, self-test log) and runs a short self-test from it."""

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import login_on_lab, shot, wait_for_operation

pytestmark = [pytest.mark.browser, pytest.mark.lab, pytest.mark.lane(1), pytest.mark.django_db(transaction=True)]


def test_read_the_disks_open_one_and_run_a_self_test(page, lab_worker, guest):
    login_on_lab(page)
    page.goto("/pools/")
    page.click("text=Refresh inventory")  # the inventory names the disks the health column goes with
    wait_for_operation(page)
    page.goto("/health/")
    page.click("button:has-text('Read now')")
    wait_for_operation(page)
    page.goto("/health/")
    assert page.locator("#health tr:has-text('TARNSATA1') [data-health=ok]").count() == 1
    virtio = page.locator("#health tr:has-text('vdb')")  # by its by-id name, the kernel's beside it, in plain words
    assert virtio.locator("a").inner_text() == "virtio-zfsdisk1" and virtio.locator("[data-health=unsupported]").count()
    assert "virtio disks report no SMART" in virtio.inner_text()
    shot(page, "health-01-list")
    page.goto("/pools/disks/")
    assert page.locator("tr:has-text('TARNSATA1') [data-health=ok]").count() == 1  # the inventory's column

    page.goto("/health/")
    page.click("#health a:text-is('ata-TarnLab_HDD_TARNSATA1')")
    expect(page.locator("main")).to_contain_text(
        "smartctl said: a SMART command failed"
    )  # QEMU's SATA disks answer -x so
    assert page.locator("#attributes td:text-is('Power_On_Hours')").count() == 1
    page.wait_for_function(
        "() => Chart.getChart(document.querySelector('canvas[data-chart]'))?.data.labels.length >= 1"
    )
    disk_url = page.url
    page.select_option("select[name=kind]", "short")
    page.click("button:has-text('Start')")
    wait_for_operation(page)
    page.goto(disk_url)
    assert page.locator("#self-tests td:text-is('Short offline')").count() >= 1
    shot(page, "health-02-disk")
