"""In a real browser, against the lab's OpenZFS, with a real worker: an admin opens a folder from the tree, shares it
with a group from a template (Tarn sets acltype=posix first), sees getfacl's text change, asks what a member and a
stranger may do there, and reads the quota report."""

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import login_on_lab, nav_to, shot, wait_for_operation

pytestmark = [pytest.mark.browser, pytest.mark.lab, pytest.mark.lane(1), pytest.mark.django_db(transaction=True)]


def test_share_a_folder_with_a_group_from_a_template_and_ask_who_may_do_what(page, lab_worker, guest):
    guest.sh(
        "zpool create -f tank /dev/disk/by-id/virtio-zfsdisk1 && zfs create tank/office && "
        "mkdir -p /tank/office/team/2026 && groupadd -f team && useradd -G team carol && useradd dave"
    )
    login_on_lab(page)
    page.goto("/pools/")
    page.click("text=Refresh inventory")
    wait_for_operation(page)
    nav_to(page, "Sharing", "Permissions")
    with page.expect_navigation():
        page.select_option("#pick-dataset", "tank/office")
    page.click("summary:has-text('team')")  # the tree opens one folder at a time
    expect(page.locator("details[open] > .children summary a:text-is('2026')")).to_be_visible()
    page.click("summary a:text-is('team')")
    expect(page.locator("#getfacl")).to_contain_text("# group: root")
    page.click("[data-template=group-shared]")
    page.fill("#id_group", "team")
    page.click("#acl-apply")
    wait_for_operation(page)
    page.click("#operation-back")
    page.goto("/permissions/?dataset=tank/office&path=team")
    expect(page.locator("#getfacl")).to_contain_text("# group: team")
    expect(page.locator("#getfacl")).to_contain_text("default:group::rwx")
    shot(page, "permissions-01-editor")
    page.fill("#effective-user", "carol")
    page.click("#effective-form button")
    expect(page.locator("#effective-said [data-perm=create]")).to_have_text("create and delete")
    page.fill("#effective-user", "dave")
    page.click("#effective-form button")
    expect(page.locator("#effective-said [data-perm=read]")).to_have_text("not read")
    shot(page, "permissions-02-effective")

    nav_to(page, "Sharing", "Quotas")
    page.click("button:has-text('Read now')")
    wait_for_operation(page)
    page.goto("/permissions/quotas/")
    expect(page.locator("#quota-uses")).to_contain_text("root")
    shot(page, "permissions-03-quotas")
