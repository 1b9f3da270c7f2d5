"""The lab tier uses the shared lab fixtures (and the alert receivers), a pool with two datasets and two Samba
users (`shared`), and this machine's smbclient against the guest's smbd."""

import subprocess
import time

import pytest

from pools import services
from shares import services as share_services
from tests.conftest import require_tool
from tests.support.lab_fixtures import guest, lab, lab_host  # noqa: F401
from tests.support.receivers import receiver, smtp  # noqa: F401

D = "/dev/disk/by-id/virtio-zfsdisk{}".format


@pytest.fixture
def shared(guest, lab_host, admin_user, run_queued):  # noqa: F811 (fixtures)
    """A pool with tank/docs (and tank/other), Samba users alice and bob, and a way to run operations."""
    guest.sh(
        "zpool create -f tank "
        + D(1)
        + " && zfs create tank/docs && zfs create tank/other && chmod 0777 /tank/docs /tank/other"
    )
    services.inventory_refresh(host=lab_host)

    def do(start, **kwargs):
        op = run_queued(start, host=lab_host, user=admin_user, **kwargs)
        assert op.status == "succeeded", op.message
        return op

    for name in ("alice", "bob"):
        do(share_services.samba_user_start, action="add", username=name, password=f"{name}-password-1")
    return do


def smbclient(vm, share: str, *args: str, command: str = "ls") -> subprocess.CompletedProcess:
    argv = [require_tool("smbclient"), f"//127.0.0.1/{share}", "-p", vm.env["LAB_SMB_PORT"], *args, "-c", command]
    for _ in range(10):  # smbd re-reads its config within a moment of reload-config
        result = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        if "NT_STATUS_BAD_NETWORK_NAME" not in result.stdout + result.stderr:
            return result
        time.sleep(1)
    return result
