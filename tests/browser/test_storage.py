"""In a real browser, against the lab's real OpenZFS, with a real worker: a mirror pool, a dataset, snapshots, a rollback."""

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import login_on_lab, shot, wait_for_operation

pytestmark = [pytest.mark.browser, pytest.mark.lab, pytest.mark.lane(1), pytest.mark.django_db(transaction=True)]
D = "/dev/disk/by-id/virtio-zfsdisk{}".format


def test_an_admin_builds_a_pool_dataset_and_snapshots_then_destroys_it(page, lab_worker, guest):
    login_on_lab(page)
    page.goto("/pools/")
    assert "on lab" in page.inner_text("h1")
    page.click("text=Refresh inventory")
    wait_for_operation(page)

    page.goto("/pools/create/")
    page.fill("input[name=name]", "tank")
    page.check(f"#id_disks input[value='{D(1)}']")
    page.check(f"#id_disks input[value='{D(2)}']")
    page.wait_for_selector("#pool-estimate:has-text('usable')")
    shot(page, "storage-01-create-form")
    page.click("button:has-text('Create pool')")
    wait_for_operation(page)
    shot(page, "storage-02-created")

    page.goto("/pools/")
    page.click("main table >> text=tank")
    page.wait_for_url("**/pools/*/")
    pool_url = page.url
    assert page.locator("text=mirror-0").count() == 1
    assert page.locator("td:has-text('virtio-zfsdisk1-part1')").count() == 1
    shot(page, "storage-03-pool")

    # Replace asks first: only free disks at least as large (the lab's 2 GiB SATA disks are named, not offered), with
    # their sizes, and the device's name typed; a wrong name changes nothing.
    page.click("tr:has(td:has-text('virtio-zfsdisk2-part1')) >> text=Replace…")
    expect(page.locator("#pool-device")).to_contain_text("Not offered, smaller than")
    options = page.locator("select[name=new_device] option").all_inner_texts()
    assert options and all("virtio-zfsdisk" in o and "GB" in o for o in options), options
    page.fill("input[name=confirm]", "virtio-zfsdisk1-part1")
    page.click("#pool-device button:has-text('Replace')")
    expect(page.locator("#pool-device")).to_contain_text("Type the device's name (virtio-zfsdisk2-part1)")
    shot(page, "storage-03b-replace-asks")
    page.goto(pool_url)

    page.click("summary:has-text('New dataset or zvol')")
    page.fill("form[action*='datasets/create'] input[name=name]", "data")
    page.select_option("form[action*='datasets/create'] select[name=compression]", "zstd")
    page.click("form[action*='datasets/create'] button:has-text('Create')")
    wait_for_operation(page)
    page.goto(pool_url)
    page.click("main table >> text=tank/data")
    page.wait_for_url("**/datasets/**")
    dataset_url = page.url  # stays valid through every operation below: rows are updated in place
    assert page.locator("tr:has(td:text-is('compression')) code").inner_text() == "zstd"
    for name in ("one", "two"):
        page.fill("form[action*='snapshots/create'] input[name=name]", name)
        page.click("button:has-text('Take snapshot')")
        wait_for_operation(page)
        if name == "one":
            guest.sh("echo after-one > /tank/data/file && sync")
        page.goto(dataset_url)
    shot(page, "storage-04-dataset-with-snapshots")
    row = page.locator("tr:has(td:text-is('@one'))")
    row.locator("input[name=confirm]").fill("one")
    row.locator("button:has-text('Roll back')").click()
    wait_for_operation(page)
    assert guest.sh("ls /tank/data").strip() == ""  # the file written after @one is gone
    page.goto(pool_url)
    shot(page, "storage-05-rolled-back")
    page.fill("input[name=confirm]", "wrong")
    page.click("button:has-text('Destroy pool')")
    expect(page.locator("#toasts")).to_contain_text("Type the pool's name")
    page.fill("input[name=confirm]", "tank")
    page.click("button:has-text('Destroy pool')")
    wait_for_operation(page)
    page.goto("/pools/")
    assert "No pools on lab yet" in page.inner_text("main")
    shot(page, "storage-06-destroyed")
