"""In a real browser, against the lab's OpenZFS, with a real worker: an operator finds the snapshot a deleted file is
in from the navigation alone, sees it marked gone from the live folder, looks at its versions and what changed,
restores it beside the live one and finds it there; the pool's page shows its capacity forecast's place."""

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import login_on_lab, nav_to, shot, wait_for_operation

pytestmark = [pytest.mark.browser, pytest.mark.lab, pytest.mark.lane(1), pytest.mark.django_db(transaction=True)]


def test_find_a_deleted_file_in_a_snapshot_see_its_versions_and_restore_it_beside(page, lab_worker, guest):
    guest.sh(
        "zpool create -f tank /dev/disk/by-id/virtio-zfsdisk1 && zfs create tank/docs && mkdir /tank/docs/team && "
        "echo v1 > /tank/docs/team/report.txt && zfs snapshot tank/docs@mon && "
        "echo v2 > /tank/docs/team/report.txt && zfs snapshot tank/docs@tue && rm /tank/docs/team/report.txt"
    )
    login_on_lab(page)
    page.goto("/pools/")
    page.click("text=Refresh inventory")
    wait_for_operation(page)
    nav_to(page, "Storage", "Browse snapshots")
    page.click("#filesystems a:text-is('tank/docs')")
    page.click("#snapshots a:text-is('tue')")
    page.click("#entries a:text-is('team/')")
    row = page.locator("#entries tr", has_text="report.txt")
    expect(row.locator("td.live-gone")).to_have_text("gone")
    shot(page, "recovery-01-snapshot")

    row.locator("a:text-is('Versions')").click()
    expect(page.locator("#versions")).to_contain_text("@tue")
    expect(page.locator("#versions")).to_contain_text("@mon")
    expect(page.locator("#versions")).to_contain_text("not there now")
    shot(page, "recovery-02-versions")
    page.go_back()
    page.click("#what-changed")
    expect(page.locator("#change-counts")).to_contain_text("1 removed")
    page.go_back()

    # each page here asks the guest (python3 started under emulation, a snapshot mounted): slower than the default 30 s
    # once, with the unit tier beside it
    page.locator("#entries tr", has_text="report.txt").locator("a:text-is('Restore…')").click(timeout=90_000)
    expect(page.locator("#restore-preview")).to_contain_text("gone since")
    page.check("input[name=how][value=beside]")
    page.click("#restore-form button")
    wait_for_operation(page)
    expect(page.locator("main")).to_contain_text("beside it (.restored-tue)")
    assert guest.sh("cat /tank/docs/team/report.txt.restored-tue").strip() == "v2"
    shot(page, "recovery-03-restored")

    page.goto("/pools/")
    page.click("a:text-is('tank')")
    expect(page.locator("#forecast")).to_be_visible()  # no history yet: it says what comes
    expect(page.locator("main")).to_contain_text("No capacity history yet")
