"""Shares against the lab's real smbd and nfsd: this machine's smbclient with a Samba user's password, NFS
mounts (v3 and v4.2) in the guest, Previous Versions from ZFS snapshots, and bad input leaving the files alone."""

import time
from datetime import UTC, datetime

import pytest
from django.core.exceptions import ValidationError

from appliance.operations import operation_execute
from hostlib import nfs, samba
from hostlib.configfiles import ConfigRejected
from pools import services
from shares import services as share_services
from shares.models import NfsExport, SmbShare
from tests.lab.conftest import smbclient

pytestmark = [pytest.mark.lab, pytest.mark.lane(1)]
D = "/dev/disk/by-id/virtio-zfsdisk{}".format
SHARE = dict(
    comment="",
    preset="general",
    read_only=False,
    browseable=True,
    guest_ok=False,
    valid_users="alice",
    hosts_allow="",
    hosts_deny="",
    previous_versions=True,
    snapshot_prefix="auto",
    time_machine_quota="",
)
NFS = {  # an export's settings as a form posts them: rw, root squashed, AUTH_SYS, sync writes
    "read_only": False,
    "squash": "root_squash",
    "anonuid": None,
    "anongid": None,
    "sec": "sys",
    "async_writes": False,
    "comment": "",
}


def test_an_smb_share_serves_its_user_and_refuses_everyone_else(guest, shared, tmp_path):
    started = time.monotonic()
    shared(share_services.smb_share_save_start, data={"name": "docs", "dataset": "tank/docs", **SHARE})
    payload = tmp_path / "up.bin"
    payload.write_bytes(bytes(range(256)) * 1024)
    ok = smbclient(
        guest, "docs", "-U", "alice%alice-password-1", command=f"put {payload} f.bin; get f.bin {tmp_path}/d"
    )
    assert ok.returncode == 0, ok.stdout + ok.stderr
    print(f"create share → smbclient works: {time.monotonic() - started:.1f} s")
    # An SMB change leaves NFS alone: no exports file written, nfs-server not restarted.
    assert guest.sh(f"ls {nfs.NFS_EXPORTS} {nfs.NFS_CONF} 2>&1 || true").count("No such file") == 2
    assert (tmp_path / "d").read_bytes() == payload.read_bytes()
    assert guest.sh("stat -c %U /tank/docs/f.bin").strip() == "alice"

    wrong = smbclient(guest, "docs", "-U", "alice%wrong-password")
    assert wrong.returncode != 0 and "NT_STATUS_LOGON_FAILURE" in wrong.stdout + wrong.stderr
    bob = smbclient(guest, "docs", "-U", "bob%bob-password-1")
    assert bob.returncode != 0 and "NT_STATUS_ACCESS_DENIED" in bob.stdout + bob.stderr
    smb1 = smbclient(guest, "docs", "-U", "alice%alice-password-1", "-m", "NT1", "--option=client min protocol=NT1")
    assert smb1.returncode != 0 and "NT_STATUS" in smb1.stdout + smb1.stderr  # SMB1 is never offered

    guest_try = smbclient(guest, "docs", "-N")
    assert guest_try.returncode != 0
    shared(
        share_services.smb_share_save_start, data={"name": "pub", "dataset": "tank/other", **SHARE, "valid_users": ""}
    )
    assert smbclient(guest, "pub", "-N").returncode != 0  # guest off by default
    pub = SmbShare.objects.get(name="pub")
    shared(share_services.smb_share_save_start, pk=pub.pk, data={"guest_ok": True})
    assert smbclient(guest, "pub", "-N").returncode == 0


def test_previous_versions_list_the_datasets_snapshots(guest, shared, lab_host):
    shared(share_services.smb_share_save_start, data={"name": "docs", "dataset": "tank/docs", **SHARE})
    guest.sh("echo v1 > /tank/docs/report.txt && sync")
    taken = datetime(2026, 1, 2, 3, 4, tzinfo=UTC)
    guest.sh(f"zfs snapshot tank/docs@auto-{taken:%Y-%m-%d_%H-%M} && echo v2 > /tank/docs/report.txt && sync")
    info = smbclient(guest, "docs", "-U", "alice%alice-password-1", command="allinfo report.txt")
    assert info.returncode == 0, info.stdout + info.stderr
    assert "@GMT-2026.01.02-03.04.00" in info.stdout, info.stdout


def test_bad_input_leaves_the_files_byte_identical(guest, shared, lab_host, admin_user):
    shared(share_services.smb_share_save_start, data={"name": "docs", "dataset": "tank/docs", **SHARE})
    shared(
        share_services.nfs_export_save_start,
        data={"dataset": "tank/docs", "clients": "127.0.0.1", **NFS},
    )
    before = guest.sh(f"cat {samba.SMB_INCLUDE} {nfs.NFS_EXPORTS} {samba.SMB_CONF} | sha256sum")
    hostile = [
        {"name": "x]\n[y", "dataset": "tank/other", **SHARE},
        {"name": "evil", "dataset": "tank/other", **SHARE, "comment": "x\n  root preexec = /bin/touch /tmp/pwned"},
        {"name": "evil", "dataset": "tank/other", **SHARE, "valid_users": "alice\n[global]"},
        {"name": "DOCS", "dataset": "tank/other", **SHARE},
        {"name": "evil", "dataset": "tank/nope", **SHARE},
    ]
    for data in hostile:
        with pytest.raises(ValidationError):
            share_services.smb_share_save_start(host=lab_host, user=admin_user, data=data)
    with pytest.raises(ValidationError):
        share_services.nfs_export_save_start(
            host=lab_host,
            user=admin_user,
            data={
                "dataset": "tank/other",
                "clients": "127.0.0.1(rw,no_root_squash)",
                "squash": "root_squash",
                "sec": "sys",
                "read_only": False,
                "async_writes": False,
            },
        )
    with pytest.raises(ConfigRejected, match="testparm"):  # the real tool's own check, last line of defence
        samba.apply_smb(guest.transport(), "[global]\n   frobnicate = yes\n")
    # testparm does not load VFS modules; smbd would refuse the share at connect. A module the new file names
    # for the first time is looked up on the host.
    guest.sh("mv \"$(smbd -b | sed -n 's/^ *MODULESDIR: *//p')/vfs/fruit.so\" /root/")
    with pytest.raises(ConfigRejected, match="fruit is not installed"):
        samba.apply_smb(guest.transport(), "[tm]\n   path = /tank/docs\n   vfs objects = catia fruit streams_xattr\n")
    assert guest.sh(f"cat {samba.SMB_INCLUDE} {nfs.NFS_EXPORTS} {samba.SMB_CONF} | sha256sum") == before
    assert not SmbShare.objects.filter(name="evil").exists() and NfsExport.objects.count() == 1
    with pytest.raises(ValidationError, match="in use by SMB share docs"):
        services.pool_destroy_start(host=lab_host, user=admin_user, name="tank", confirm="tank")


def test_nfs_exports_mount_over_v3_and_v4_and_squash_root(guest, shared, lab_host):
    shared(share_services.nfs_export_save_start, data={"dataset": "tank/docs", "clients": "127.0.0.1", **NFS})
    shared(
        share_services.nfs_export_save_start,
        data={"dataset": "tank/other", "clients": "127.0.0.1", **NFS, "read_only": True},
    )
    for vers in ("3", "4.2"):
        guest.sh(f"mkdir -p /mnt/v{vers} && mount -t nfs -o vers={vers} 127.0.0.1:/tank/docs /mnt/v{vers}")
        guest.sh(f"echo hello-{vers} > /mnt/v{vers}/f{vers} && sync")
        assert guest.sh(f"cat /tank/docs/f{vers}").strip() == f"hello-{vers}"
        assert guest.sh(f"stat -c %u /tank/docs/f{vers}").strip() == "65534"  # root on the client became nobody
    guest.sh("mkdir -p /mnt/ro && mount -t nfs -o vers=4.2 127.0.0.1:/tank/other /mnt/ro")
    refused = guest.sh("touch /mnt/ro/x 2>&1 || true")
    assert "Read-only file system" in refused
    exports = guest.sh("exportfs -v")
    assert "/tank/docs" in exports and "/tank/other" in exports
    share_services.share_status_refresh(
        host=lab_host
    )  # v4.2 mounts are nfsd clients; the v3 mount is in mountd's rmtab
    clients = lab_host.share_status.nfs_clients
    v4 = [c for c in clients if c["version"] != "3"]
    assert v4 and all(c["version"] == "4.2" for c in v4), clients
    assert any("127.0.0.1" in c["address"] for c in v4), clients
    assert [c for c in clients if c["version"] == "3"] == [
        {"address": "127.0.0.1", "name": "/tank/docs", "version": "3"}
    ]
    guest.sh("umount /mnt/v3")
    share_services.share_status_refresh(host=lab_host)
    lab_host.share_status.refresh_from_db()
    assert not [c for c in lab_host.share_status.nfs_clients if c["version"] == "3"]  # unmounted: gone


def test_a_share_creates_its_dataset_with_the_presets_properties(guest, shared, lab_host):
    shared(
        share_services.smb_share_save_start,
        data={"name": "team", **SHARE, "preset": "multi_user"},
        new_dataset="tank/team",
    )
    xattr, acltype = guest.sh("zfs get -H -o value,source xattr,acltype tank/team").splitlines()
    assert xattr.split() == ["on", "local"]  # OpenZFS 2.3 shows xattr=sa as "on" (sa is its default meaning)
    assert acltype.split() == ["posix", "local"]
    assert SmbShare.objects.get(name="team").path == "/tank/team"
    assert guest.sh("stat -c '%a %U %G' /tank/team").split() == ["2775", "root", "users"]
    put = smbclient(guest, "team", "-U", "alice%alice-password-1", command="put /etc/hostname a.txt")
    assert put.returncode == 0, put.stdout + put.stderr  # a Samba user may write: it is in the shared group
    assert guest.sh("stat -c '%U %G' /tank/team/a.txt").split() == ["alice", "users"]


def test_folder_permissions_decide_who_writes_once_samba_lets_them_in(guest, shared, lab_host, tmp_path):
    shared(
        share_services.smb_share_save_start, data={"name": "docs", "dataset": "tank/docs", **SHARE, "valid_users": ""}
    )
    share = SmbShare.objects.get(name="docs")
    payload = tmp_path / "p.txt"
    payload.write_text("x")
    put = f"put {payload} f.txt"
    op = shared(share_services.smb_share_folder_start, pk=share.pk, owner="alice", group="alice", mode="0700")
    assert op.message == "/tank/docs: root:root 777 → alice:alice 700", op.message
    assert guest.sh("stat -c '%U:%G %a' /tank/docs").strip() == "alice:alice 700"
    assert smbclient(guest, "docs", "-U", "alice%alice-password-1", command=put).returncode == 0
    refused = smbclient(guest, "docs", "-U", "bob%bob-password-1", command=put)
    assert refused.returncode != 0 and "NT_STATUS_ACCESS_DENIED" in refused.stdout + refused.stderr
    shared(share_services.smb_share_folder_start, pk=share.pk, owner="root", group="users", mode="2775")
    assert smbclient(guest, "docs", "-U", "bob%bob-password-1", command=f"put {payload} g.txt").returncode == 0
    assert guest.sh("stat -c '%U:%G' /tank/docs/g.txt").strip() == "bob:users"  # setgid kept the group


def test_tarn_acts_only_on_accounts_it_made(guest, shared, lab_host, admin_user, run_queued):
    """Adding then deleting the Samba user www-data once removed the guest's www-data account."""
    for name in ("www-data", "sshd", "root", "systemd-network"):
        with pytest.raises(ValidationError):
            share_services.samba_user_start(
                host=lab_host, user=admin_user, action="add", username=name, password="x" * 12
            )
    guest.sh("useradd --no-create-home carol")  # an account an admin made by hand
    op = run_queued(
        share_services.samba_user_start,
        host=lab_host,
        user=admin_user,
        action="add",
        username="carol",
        password="carol-password-1",
    )
    assert op.status == "failed" and "Tarn did not make" in op.message
    assert "carol" not in guest.sh("pdbedit -L") and guest.sh("id -u carol").strip().isdigit()
    shared(share_services.samba_user_start, action="delete", username="alice", confirm="alice")  # Tarn made it
    assert "no such user" in guest.sh("id alice 2>&1 || true")
    assert guest.sh("id -u www-data").strip() == "33"


def test_a_link_planted_where_a_private_folder_goes_is_refused_not_followed(
    guest, shared, lab_host, admin_user, django_capture_on_commit_callbacks
):
    """Private shares make <share>/<user> as root on a tree users write: a link there once chowned its target."""
    guest.sh("ln -s /etc /tank/docs/bob")  # bob's folder does not exist yet: a link to /etc stands in its place
    with django_capture_on_commit_callbacks(execute=False):
        op = share_services.smb_share_save_start(
            host=lab_host, user=admin_user, data={"name": "home", "dataset": "tank/docs", **SHARE, "preset": "private"}
        )
    operation_execute(op.pk)
    op.refresh_from_db()
    assert op.status == "failed" and "/tank/docs/bob is a symlink" in op.message, op.message
    assert guest.sh("stat -c '%U:%G %a' /etc").strip() == "root:root 755"
    assert guest.sh("stat -c '%U %a' /tank/docs/alice").strip() == "alice 700"  # made before meeting bob's link
