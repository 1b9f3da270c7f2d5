"""Permissions and quotas against the lab's OpenZFS, smbd and nfsd: a group-shared ACL decides who writes over SMB
and NFS (and what Tarn says a user may do is what smbclient finds), new files inherit it; a walk over 10,000 files
with a link planted mid-run changes nothing outside and stops when asked; a user over quota gets EDQUOT over SMB and
NFS, the alert rises, and SMB shows the quota as the share's size; a project quota caps a folder."""

import os
import time

import pytest

from analytics.models import Alert
from analytics.services import alerts_evaluate
from hostlib import acl
from permissions import services
from permissions.choices import WalkStatus
from permissions.models import AclWalk, QuotaUse
from shares import services as share_services
from tests.lab.conftest import smbclient
from tests.lab.test_shares import NFS, SHARE

pytestmark = [pytest.mark.lab, pytest.mark.lane(1)]
GROUP_SHARED = {
    "owner": "root",
    "group": "team",
    "owner_perms": "rwx",
    "group_perms": "rwx",
    "other_perms": "---",
    "setgid": True,
    "sticky": False,
    "defaults": True,
    "entries": [],
}


def as_user(name: str, command: str) -> str:
    """A shell command run as a local account with its groups (as nfsd sees an AUTH_SYS client's)."""
    return f"setpriv --reuid={name} --regid={name} --init-groups sh -c '{command}' 2>&1; echo rc=$?"


def acl_of_file(guest, path: str) -> acl.Acl | None:
    out = guest.sh(
        f"python3 -c \"import os;print(os.getxattr('{path}','system.posix_acl_access').hex())\" 2>/dev/null || true"
    ).strip()
    return acl.Acl.decode(bytes.fromhex(out)) if out else None


@pytest.fixture
def docs_shared(guest, shared, lab_host):
    """tank/docs shared over SMB (every Samba user may connect: the folders decide) and NFS to the guest itself,
    mounted at /mnt/docs; alice in the group team, bob not. Made through Tarn once on top of "shared" and saved as
    the guest's state "docs-shared" (each test had paid ~22 s for it); a test restoring it has the shares on the
    guest, not Tarn's rows for them (none of these tests changes a share)."""

    def build():
        guest.sh(
            "groupadd -f team && usermod -aG team alice && install -d -m 0777 /tank/docs/projects /tank/docs/outside"
        )
        shared(
            share_services.smb_share_save_start,
            data={"name": "docs", "dataset": "tank/docs", **SHARE, "valid_users": ""},
        )
        shared(share_services.nfs_export_save_start, data={"dataset": "tank/docs", "clients": "127.0.0.1", **NFS})
        guest.sh("mkdir -p /mnt/docs && mount -t nfs -o vers=4.2 127.0.0.1:/tank/docs /mnt/docs")

    guest.enter("docs-shared", build, base="shared")
    yield shared
    guest.sh("umount -f /mnt/docs 2>/dev/null; true")


def test_a_group_shared_acl_decides_who_writes_over_smb_and_nfs(guest, docs_shared, lab_host, admin_user, tmp_path):
    started = time.monotonic()
    op = docs_shared(services.acl_set_start, dataset="tank/docs", path="projects", spec=GROUP_SHARED)
    print(f"group-shared ACL set (acltype=posix and xattr=sa first): {time.monotonic() - started:.1f} s")
    # acltype was off (Linux's default): the plan set it first. OpenZFS 2.3's xattr=on is sa (it prints sa as on).
    assert guest.sh("zfs get -H -o value acltype,xattr tank/docs").split() == ["posix", "on"]
    where = services.place(host=lab_host, dataset="tank/docs", path="projects")
    folder = services.folder_read(where=where)
    assert (folder.owner, folder.group, folder.mode & 0o7777) == ("root", "team", 0o2770)
    assert folder.default is not None and "default:group::rwx" in folder.text, op.message

    payload = tmp_path / "p.txt"
    payload.write_text("x")
    alice = smbclient(guest, "docs", "-U", "alice%alice-password-1", command=f"cd projects; put {payload} a.txt")
    bob = smbclient(guest, "docs", "-U", "bob%bob-password-1", command=f"cd projects; put {payload} b.txt")
    assert alice.returncode == 0, alice.stdout + alice.stderr
    assert bob.returncode != 0 and "NT_STATUS_ACCESS_DENIED" in bob.stdout + bob.stderr
    said = {name: services.effective_for(where=where, folder=folder, username=name) for name in ("alice", "bob")}
    assert said["alice"]["together"]["wx"] and "team" in said["alice"]["why"]
    assert not said["bob"]["together"]["wx"] and said["bob"]["perms"] == 0, said["bob"]

    # Over NFS (AUTH_SYS: the client's uid and groups), the same answer
    assert "rc=0" in guest.sh(as_user("alice", "echo n > /mnt/docs/projects/n.txt"))
    refused = guest.sh(as_user("bob", "echo n > /mnt/docs/projects/m.txt"))
    assert "Permission denied" in refused and "rc=0" not in refused

    # Files made later inherit the default ACL (group rw-, others nothing) and the folder's group (set-gid), over SMB
    # as over NFS (Samba's masks would have cut a file to 740: Tarn's shares take the folder's permissions). A folder
    # without a default ACL gives what its mode says (0755: 644 and 755).
    guest.sh("install -d -o alice -m 0755 /tank/docs/mine")
    sub = smbclient(
        guest,
        "docs",
        "-U",
        "alice%alice-password-1",
        command=f"cd projects; mkdir sub; cd ../mine; put {payload} m.txt; mkdir in",
    )
    assert sub.returncode == 0, sub.stdout
    made = guest.sh(
        "cd /tank/docs && stat -c '%n %G %a' projects/a.txt projects/n.txt projects/sub mine/m.txt mine/in"
    ).split("\n")[:5]
    assert made == ["projects/a.txt team 660", "projects/n.txt team 660", "projects/sub team 2770",
                    "mine/m.txt alice 644", "mine/in alice 755"], made  # fmt: skip
    inner = services.folder_read(where=services.place(host=lab_host, dataset="tank/docs", path="projects/sub"))
    assert inner.default is not None and inner.group == "team"


def test_a_walk_over_10000_files_skips_a_link_planted_mid_run_and_stops_when_asked(
    guest, docs_shared, lab_host, admin_user, run_queued, monkeypatch
):
    guest.sh(
        "cd /tank/docs/projects && for d in $(seq -w 0 99); do mkdir d$d; done && "
        "python3 -c \"import os\nfor d in range(100):\n for f in range(100): open(f'd{d:02d}/f{f}', 'w').close()\" && "
        "echo secret > /tank/docs/outside/keep && chmod 0600 /tank/docs/outside/keep"
    )
    outside = guest.sh("stat -c '%u %g %a' /tank/docs/outside /tank/docs/outside/keep")
    walk = run_queued(
        services.walk_count_start,
        host=lab_host,
        user=admin_user,
        dataset="tank/docs",
        path="projects",
        spec={**GROUP_SHARED, "owner": "bob"},
    )
    assert walk.status == WalkStatus.PREVIEWED, walk.count_operation.message
    assert walk.preview["files"] == 10_000 and walk.preview["folders"] == 101
    monkeypatch.setattr("permissions.services.walks.WALK_POLL_SECONDS", 0.1)
    pause, planted = time.sleep, []

    def mid_run(seconds):
        pause(seconds)
        current = AclWalk.objects.get(pk=walk.pk)
        if not planted and current.applied.get("files", 0) > 0:
            # a user swaps a folder the walk has yet to reach (the last by name) for a link to one outside
            guest.sh("cd /tank/docs/projects && mv d99 ../d99-moved && ln -s /tank/docs/outside d99")
            planted.append(current.applied["files"])
            services.walk_stop(walk=current, user=admin_user)

    monkeypatch.setattr("permissions.services.walks.pause", mid_run)
    op = run_queued(services.walk_apply_start, walk=walk, user=admin_user, confirm="projects")
    monkeypatch.undo()
    walk.refresh_from_db()
    print(f"walk: planted after {planted} files; {walk.applied}")
    assert planted and planted[0] < 10_000, "the walk ended before the link could be planted: make it longer"
    assert walk.status == WalkStatus.STOPPED and op.status == "succeeded", op.message
    assert walk.applied["stopped"] and walk.applied["files"] < 10_000
    assert guest.sh("stat -c '%u %g %a' /tank/docs/outside /tank/docs/outside/keep") == outside
    assert acl_of_file(guest, "/tank/docs/outside/keep") is None
    # exactly what it counted, nothing more (the swapped folder's files count where they went if it had been walked)
    owned = int(guest.sh("find /tank/docs/projects /tank/docs/d99-moved -xdev -type f -user bob | wc -l"))
    assert owned == walk.applied["files"]


def test_a_user_over_quota_cannot_write_over_smb_or_nfs_and_the_alert_rises(
    guest, docs_shared, lab_host, admin_user, run_queued, tmp_path
):
    guest.sh("chmod 0777 /tank/docs")
    op = run_queued(
        services.quota_set_start,
        host=lab_host,
        user=admin_user,
        dataset="tank/docs",
        kind="user",
        name="alice",
        quota="2M",
    )
    assert op.status == "succeeded", op.message
    size = smbclient(guest, "docs", "-U", "alice%alice-password-1", command="du")
    blocks = [line for line in size.stdout.splitlines() if "blocks of size" in line]
    assert blocks, size.stdout
    total, unit = (int(x.rstrip(".")) for x in blocks[0].split()[:5:4])  # "N blocks of size M. K blocks available"
    assert total * unit == 2 << 20, blocks  # SMB shows alice's quota as the share's size (tarn-dfree)

    payload = tmp_path / "big.bin"
    payload.write_bytes(os.urandom(1 << 20))
    smb_said = ""
    for n in range(8):  # ZFS counts a user's bytes once their transaction group is synced: then EDQUOT
        got = smbclient(guest, "docs", "-U", "alice%alice-password-1", command=f"put {payload} s{n}.bin")
        if got.returncode != 0 or "NT_STATUS" in got.stdout:
            smb_said = got.stdout + got.stderr
            break
        guest.sh("zpool sync tank")
    assert "NT_STATUS_DISK_FULL" in smb_said or "QUOTA" in smb_said.upper(), smb_said
    nfs = guest.sh(as_user("alice", "dd if=/dev/urandom of=/mnt/docs/n.bin bs=1M count=1 conv=fsync"))
    assert "Disk quota exceeded" in nfs, nfs  # over already: refused from the first write

    run_queued(services.quotas_read_start, host=lab_host, user=admin_user)
    alerts_evaluate(host=lab_host)
    alert = Alert.objects.get(host=lab_host, rule="quota_full", cleared_at__isnull=True)
    assert alert.subject == "user alice on tank/docs", alert.subject


def test_a_project_quota_caps_a_folder(guest, shared, lab_host, admin_user, run_queued):
    guest.sh("install -d -m 0777 /tank/docs/apollo/inner && touch /tank/docs/apollo/inner/old")
    op = run_queued(
        services.project_assign_start, host=lab_host, user=admin_user, dataset="tank/docs", path="apollo", project="42"
    )
    assert op.status == "succeeded", op.message
    assert guest.sh("zfs project -d /tank/docs/apollo").split()[:2] == ["42", "P"]
    assert guest.sh("zfs project /tank/docs/apollo/inner/old").split()[0] == "42"
    run_queued(
        services.quota_set_start,
        host=lab_host,
        user=admin_user,
        dataset="tank/docs",
        kind="project",
        name="42",
        quota="2M",
    )
    said = guest.sh(
        "for n in 1 2 3 4 5 6 7 8; do dd if=/dev/urandom of=/tank/docs/apollo/f$n bs=1M count=1 2>&1 "
        "|| break; zpool sync tank; done; true"
    )
    assert "Disk quota exceeded" in said, said
    assert "Disk quota exceeded" not in guest.sh(
        "dd if=/dev/urandom of=/tank/docs/free.bin bs=1M count=3 2>&1; zpool sync tank; true"
    )  # outside the project: only the dataset's own limits
    run_queued(services.quotas_read_start, host=lab_host, user=admin_user)
    project = QuotaUse.objects.get(host=lab_host, dataset="tank/docs", kind="project", name="42")
    assert project.quota == 2 << 20 and project.percent >= 90, (project.used, project.quota)
