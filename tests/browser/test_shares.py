"""In a real browser, against the lab's real smbd, with a real worker: a Samba user, a share from a preset on a
dataset, this machine's smbclient using it, and the session on the status page."""

import subprocess

import pytest

from tests.browser.conftest import login_on_lab, shot, wait_for_operation
from tests.conftest import require_tool

pytestmark = [pytest.mark.browser, pytest.mark.lab, pytest.mark.lane(1), pytest.mark.django_db(transaction=True)]


def test_an_admin_shares_a_dataset_adds_a_user_and_sees_the_session(page, lab_worker, guest):
    guest.sh("zpool create -f tank /dev/disk/by-id/virtio-zfsdisk1 && zfs create tank/team && chmod 2777 /tank/team")
    login_on_lab(page)
    page.goto("/pools/")
    page.click("text=Refresh inventory")
    wait_for_operation(page)

    page.goto("/shares/")
    assert "No SMB shares yet" in page.inner_text("main")
    page.fill("form[action*='shares/users'] input[name=username]", "alice")
    page.fill("form[action*='shares/users'] input[name=password]", "alice-password-1")
    page.click("button:has-text('Add user')")
    wait_for_operation(page)

    page.goto("/shares/smb/new/")
    page.fill("input[name=name]", "team")
    page.select_option("select[name=dataset]", "tank/team")
    page.select_option("select[name=preset]", "multi_user")
    page.fill("input[name=valid_users]", "alice")
    shot(page, "shares-01-new-share")
    page.click("button:has-text('Create share')")
    wait_for_operation(page)
    page.goto("/shares/")
    assert "/tank/team" in page.inner_text("main") and "alice" in page.inner_text("main")
    shot(page, "shares-02-list")

    client = subprocess.Popen(  # an interactive smbclient stays connected while stdin is open
        [
            require_tool("smbclient"),
            "//127.0.0.1/team",
            "-p",
            guest.env["LAB_SMB_PORT"],
            "-U",
            "alice%alice-password-1",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        client.stdin.write("put /etc/hostname hello.txt\n")
        client.stdin.flush()
        for _ in range(30):  # the put has landed once the file exists in the guest
            if guest.sh("ls /tank/team").strip() == "hello.txt":
                break
        page.click("button:has-text('Read connections')")
        wait_for_operation(page)
        page.goto("/shares/")
        connected = page.inner_text("#connections")
        assert "alice" in connected and "SMB" in connected, connected
        shot(page, "shares-03-connected")
    finally:
        client.stdin.close()
        client.wait(30)
    assert guest.sh("stat -c %U /tank/team/hello.txt").strip() == "alice"

    page.click("table a:text-is('team')")
    page.select_option("#folder select[name=owner]", "alice")
    page.select_option("#folder select[name=mode]", "2770")
    shot(page, "shares-04-folder-permissions")
    page.click("button:has-text('Set owner and mode')")
    wait_for_operation(page)
    assert "/tank/team: root:root 2777 → alice:users 2770" in page.inner_text("main")
    assert guest.sh("stat -c '%U:%G %a' /tank/team").strip() == "alice:users 2770"
