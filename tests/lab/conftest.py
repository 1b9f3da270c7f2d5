"""The lab tier uses the shared lab fixtures (and the alert receivers), a pool with two datasets and two Samba
users (`shared`), and this machine's smbclient against the guest's smbd."""

import subprocess
import time

import pytest

from pools import services
from shares import services as share_services
from shares.models import SambaUser
from tests.conftest import require_tool
from tests.support.lab_fixtures import guest, guest2, lab, lab2, lab_host  # noqa: F401
from tests.support.receivers import receiver, smtp  # noqa: F401

D = "/dev/disk/by-id/virtio-zfsdisk{}".format
USERS = ("alice", "bob")


@pytest.fixture
def shared(guest, lab_host, admin_user, run_queued):  # noqa: F811 (fixtures)
    """A pool with tank/docs (and tank/other), Samba users alice and bob, and a way to run operations. Made through
    Tarn once and saved as the guest's state "shared"; a later test restores it and gets the rows Tarn keeps."""

    def do(start, **kwargs):
        op = run_queued(start, host=lab_host, user=admin_user, **kwargs)
        assert op.status == "succeeded", op.message
        return op

    def build():
        guest.sh(
            "zpool create -f tank "
            + D(1)
            + " && zfs create tank/docs && zfs create tank/other && chmod 0777 /tank/docs /tank/other"
        )
        for name in USERS:
            do(share_services.samba_user_start, action="add", username=name, password=f"{name}-password-1")

    guest.enter("shared", build)
    for name in USERS:  # what each user's add operation left in Tarn's database (none when just made: it ran)
        SambaUser.objects.get_or_create(host=lab_host, username=name)
    services.inventory_refresh(host=lab_host)
    return do


def smbclient(vm, share: str, *args: str, command: str = "ls") -> subprocess.CompletedProcess:
    argv = [require_tool("smbclient"), f"//127.0.0.1/{share}", "-p", vm.env["LAB_SMB_PORT"], *args, "-c", command]
    for _ in range(10):  # smbd re-reads its config within a moment of reload-config
        result = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        if "NT_STATUS_BAD_NETWORK_NAME" not in result.stdout + result.stderr:
            return result
        time.sleep(1)
    return result
