"""Files inside real snapshots: browsing one mounts it (ZFS's automount) and Tarn unmounts what it mounted; a file's
versions over 30 snapshots mount one at a time and leave none mounted; a link inside a snapshot pointing out of it
is shown, never followed; names that are not text are shown escaped; a snapshot destroyed while browsing is refused
by name."""

import pytest
from django.core.exceptions import ValidationError

from hostlib import acl, snapfiles
from pools.services import inventory_refresh
from recovery import services
from recovery.models import Restore

D = "/dev/disk/by-id/virtio-zfsdisk{}".format

pytestmark = pytest.mark.lab

raw = snapfiles.raw_of
ACL = acl.build(6, 4, 0, {4321: 6}, {}).encode()  # what setfacl -m u:4321:rw makes (the lab guest has no setfacl)


def xattrs(path: str, blob: bytes) -> str:
    """The file's access ACL and a user xattr, set by python3 in the guest."""
    return (f"python3 -c \"import os; os.setxattr('{path}', 'system.posix_acl_access', bytes.fromhex('{blob.hex()}')); "
            f"os.setxattr('{path}', 'user.tag', b'kept')\"")  # fmt: skip


def read_xattrs(path: str) -> str:
    return (f"python3 -c \"import os; print(os.getxattr('{path}', 'system.posix_acl_access').hex(), "
            f"os.getxattr('{path}', 'user.tag').decode())\"")  # fmt: skip


def test_browsing_mounts_a_snapshot_only_while_it_reads_and_versions_mount_one_at_a_time(guest, lab_host):
    guest.sh(
        f"zpool create -f tank {D(1)} && zfs create tank/docs && mkdir /tank/docs/team && "
        "for i in $(seq -w 1 29); do case $i in 01|10|20) echo v$i > /tank/docs/team/report.txt;; esac; "
        "zfs snapshot tank/docs@s$i; done && "
        "ln -s /etc /tank/docs/team/out && printf x > \"$(printf '/tank/docs/team/line\\nbreak\\xff')\" && "
        "zfs snapshot tank/docs@last && echo live > /tank/docs/team/report.txt"
    )
    inventory_refresh(host=lab_host)
    where = services.where(host=lab_host, dataset="tank/docs", snapshot="last", path=raw("team"))
    page = services.folder_page(where=where)
    entries = {e.name: e for e in page.entries}
    assert entries["out"].type == "link" and entries["out"].target == "/etc", "shown with its target"
    assert entries["line\\nbreak\\xff"].raw == b"line\nbreak\xff".hex()
    assert entries["report.txt"].live == "changed" and page.mounted_here
    assert "tank/docs@last" not in guest.sh("grep zfs /proc/mounts || true"), "Tarn unmounted what it mounted"
    with pytest.raises(ValidationError) as refused:
        services.folder_page(where=services.where(host=lab_host, dataset="tank/docs", snapshot="last",
                                                  path=f"{raw('team')}/{raw('out')}"))  # fmt: skip
    assert "out is a link or not a folder" in str(refused.value)

    # What changed from @s01 to @last, through the real zfs diff: the escaped name comes back byte for byte
    rows, found = services.changes(where=services.where(host=lab_host, dataset="tank/docs"), since="s01", to="last")
    got = {(r.change, r.type, r.path) for r in rows}
    assert {("modified", "file", "team/report.txt"), ("added", "link", "team/out"),
            ("added", "file", "team/line\\nbreak\\xff")} <= got, got  # fmt: skip
    assert found.counts.get("added") == 2 and found.total == found.matched, found

    guest.sh("zfs destroy tank/docs@s29")  # destroyed behind the inventory's back
    found = services.versions(where=services.where(host=lab_host, dataset="tank/docs",
                                                   path=f"{raw('team')}/{raw('report.txt')}"))  # fmt: skip
    assert found.most_mounted == 1 and found.missing == ["s29"], found
    assert [(v.newest, v.oldest, v.count) for v in found.versions] == [
        ("last", "s20", 10), ("s19", "s10", 10), ("s09", "s01", 9)
    ], found.versions  # fmt: skip
    assert found.live != found.versions[0].stamp, "changed after @last"
    assert "@" not in guest.sh("grep ' /tank/docs/.zfs' /proc/mounts || true"), "none left mounted"


def test_a_folder_comes_back_in_place_with_its_acls_after_a_safety_snapshot_and_a_planted_link_is_refused(
    guest, lab_host, admin_user, run_queued
):
    guest.sh(
        f"zpool create -f tank {D(1)} && zfs create -o acltype=posix -o xattr=sa tank/docs && "
        "mkdir -p /tank/docs/team/deep && echo monday > /tank/docs/team/report.txt && "
        "echo notes > /tank/docs/team/deep/notes.txt && chown -R 1234:2345 /tank/docs/team && "
        f"{xattrs('/tank/docs/team/report.txt', ACL)} && head -c 8M /dev/urandom > /tank/docs/team/big.bin && "
        "zfs snapshot tank/docs@mon && rm -rf /tank/docs/team/deep && echo tuesday > /tank/docs/team/report.txt"
    )
    inventory_refresh(host=lab_host)

    def restore(path, how, **more):
        op = run_queued(lambda **kw: services.restore_start(**kw).operation, host=lab_host, user=admin_user,
                        dataset="tank/docs", snapshot="mon", path=path, how=how, **more)  # fmt: skip
        return op, Restore.objects.get(operation=op)

    op, row = restore(raw("team"), "place", confirm="team")
    assert op.status == "succeeded", (op.message, op.log)
    assert guest.sh("cat /tank/docs/team/report.txt /tank/docs/team/deep/notes.txt").split() == ["monday", "notes"]
    assert guest.sh(read_xattrs("/tank/docs/team/report.txt")).strip() == ACL.hex() + " kept", "ACL and xattr kept"
    assert guest.sh("stat -c %u:%g /tank/docs/team/deep").strip() == "1234:2345"
    row.refresh_from_db()
    assert row.safety.startswith("tank/docs@tarn-restore-") and row.progress["bytes"] >= 8 << 20
    safety = row.safety.split("@")[1]
    assert guest.sh(f"cat /tank/docs/.zfs/snapshot/{safety}/team/report.txt").strip() == "tuesday", "kept"
    assert ".tarn-restore" not in guest.sh("ls -a /tank/docs /tank/docs/team")

    op, _ = restore(f"{raw('team')}/{raw('report.txt')}", "beside")
    assert op.status == "succeeded" and guest.sh("cat /tank/docs/team/report.txt.restored-mon").strip() == "monday"

    guest.sh("rm /tank/docs/team/report.txt && ln -s /etc/passwd /tank/docs/team/report.txt")  # after the preview
    op, row = restore(f"{raw('team')}/{raw('report.txt')}", "place", confirm="report.txt")
    assert op.status == "failed" and "a link was planted where it lands" in op.message, op.message
    assert "is a link now" in row.progress["error"] and row.status == "failed", row.progress
    assert "root:x:0:0" in guest.sh("head -1 /etc/passwd"), "nothing written through the link"
    assert guest.sh("systemctl list-units --no-legend --all 'tarn-restore-*'").strip() == "", "units cleaned up"
