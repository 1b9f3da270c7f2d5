"""Files inside real snapshots: browsing one mounts it (ZFS's automount) and Tarn unmounts what it mounted; a file's
versions over 30 snapshots mount one at a time and leave none mounted; a link inside a snapshot pointing out of it
is shown, never followed; names that are not text are shown escaped; a snapshot destroyed while browsing is refused
by name."""

import pytest
from django.core.exceptions import ValidationError

from hostlib import snapfiles
from pools.services import inventory_refresh
from recovery import services

D = "/dev/disk/by-id/virtio-zfsdisk{}".format

pytestmark = pytest.mark.lab

raw = snapfiles.raw_of


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

    guest.sh("zfs destroy tank/docs@s29")  # destroyed behind the inventory's back
    found = services.versions(where=services.where(host=lab_host, dataset="tank/docs",
                                                   path=f"{raw('team')}/{raw('report.txt')}"))  # fmt: skip
    assert found.most_mounted == 1 and found.missing == ["s29"], found
    assert [(v.newest, v.oldest, v.count) for v in found.versions] == [
        ("last", "s20", 10), ("s19", "s10", 10), ("s09", "s01", 9)
    ], found.versions  # fmt: skip
    assert found.live != found.versions[0].stamp, "changed after @last"
    assert "@" not in guest.sh("grep ' /tank/docs/.zfs' /proc/mounts || true"), "none left mounted"
