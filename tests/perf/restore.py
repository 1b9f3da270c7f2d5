"""Issue 44 figures, in the lab: the first page of a 10,000-entry snapshot folder, Tarn's read (the snapshot reader
over SSH, the live folder compared) against `ls -f` by hand over SSH, in turns; a restore of a 1 GiB folder, Tarn's
unit against `cp -a` by hand, with block cloning on and off; "versions of a file" over 1,000 snapshots, the most
snapshots mounted at once counted by the reader (the bound is one per reader, four readers a host)."""

import statistics
import time

from tests.perf.directory import _side_by_side, by_hand_and_tarn
from tests.perf.foundation import lab_host, run_operations_inline

ENTRIES = 10_000
SNAPSHOTS = 1_000
FOLDER_MIB = 1024
CLONE = "/sys/module/zfs/parameters/zfs_bclone_enabled"
CLEAR = "rm -rf /tank/docs/byhand* /tank/docs/tarn* && zpool sync tank"


def lab_listing():
    found = lab_host("restore listing")
    if found is None:
        return
    guest, host = found
    from hostlib import runner
    from pools.services import inventory_refresh
    from recovery import services

    started = time.monotonic()
    guest.sh(
        "zpool create -f tank /dev/disk/by-id/virtio-zfsdisk1 && zfs create tank/docs && mkdir /tank/docs/big && "
        f"python3 -c \"import os\nfor i in range({ENTRIES}): open(f'/tank/docs/big/f{{i:05d}}', 'w').close()\" && "
        "zfs snapshot tank/docs@mon",
        timeout=1800,
    )
    yield "restore_lab_make_entries", time.monotonic() - started, "s", f"{ENTRIES} files in one folder, snapshotted"
    inventory_refresh(host=host)
    where = services.where(host=host, dataset="tank/docs", snapshot="mon", path=raw("big"))
    shown = []

    def tarn():
        page = services.folder_page(where=where)
        shown.append(len(page.entries))
        return page.total

    def cold():  # the first page of a browse: no reader kept on the host yet
        runner.forget_conversations()
        return tarn()

    def by_hand():
        guest.sh("ls -f /tank/docs/.zfs/snapshot/mon/big >/dev/null")

    hand_cold, tarn_cold, _ = _side_by_side(by_hand, cold, rounds=5)
    tarn()  # the reader the pages that follow find kept
    hand_s, tarn_s, total = _side_by_side(by_hand, tarn, rounds=5)
    runner.forget_conversations()
    yield "restore_lab_listing_entries", total, "count", f"goal {ENTRIES}; a page shows {shown[-1]}"
    yield "restore_lab_ls_by_hand", statistics.median(hand_s), "s", "ls -f over SSH"
    yield "restore_lab_first_page", statistics.median(tarn_s), "s", "goal <= 0.3: a page with the reader kept"
    yield "restore_lab_first_page_over_ls", statistics.median(tarn_s) / statistics.median(hand_s), "x", "goal <= 1.5"
    yield (
        "restore_lab_first_page_cold",
        statistics.median(tarn_cold),
        "s",
        "the first page of a browse (reader started)",
    )
    yield (
        "restore_lab_first_page_cold_over_ls",
        statistics.median(tarn_cold) / statistics.median(hand_cold),
        "x",
        "the reader's start included",
    )


def raw(name: str) -> str:
    from hostlib.snapfiles import raw_of

    return raw_of(name)


def lab_restore():
    """1 GiB in 64 files of 16 MiB (random: nothing compresses), snapshotted and removed; `cp -a` by hand out of the
    snapshot against Tarn's restore beside (its unit on the NAS, followed), block cloning off, then on."""
    found = lab_host("restore copy")
    if found is None:
        return
    guest, host = found
    from appliance.models import Operation, User
    from pools.services import inventory_refresh
    from recovery import services

    run_operations_inline()
    user = User.objects.filter(username="perf").first()
    started = time.monotonic()
    guest.sh(
        "zpool create -f -o feature@block_cloning=enabled tank /dev/disk/by-id/virtio-zfsdisk1 && "
        "zfs create -o compression=off tank/docs && mkdir /tank/docs/folder && "
        f"for i in $(seq {FOLDER_MIB // 16}); do head -c 16M /dev/urandom > /tank/docs/folder/f$i; done && "
        "zfs snapshot tank/docs@mon && rm -rf /tank/docs/folder",
        timeout=3600,
    )
    yield "restore_lab_make_folder", time.monotonic() - started, "s", f"{FOLDER_MIB} MiB in one folder"
    inventory_refresh(host=host)
    copies = iter(range(100))
    for cloning in ("0", "1"):
        guest.sh(f"echo {cloning} > {CLONE}")

        def by_hand():  # each side first removes the copy before it (the disk holds the snapshot and one copy)
            guest.sh(f"{CLEAR} && cp -a /tank/docs/.zfs/snapshot/mon/folder /tank/docs/byhand{next(copies)} && sync",
                     timeout=3600)  # fmt: skip

        def tarn():
            guest.sh(CLEAR, timeout=600)
            row = services.restore_start(host=host, user=user, dataset="tank/docs", snapshot="mon", path=raw("folder"),
                                         how="beside")  # fmt: skip
            op = Operation.objects.get(pk=row.operation.pk)
            assert op.status == "succeeded", op.message
            guest.sh("sync && mv /tank/docs/folder.restored-mon /tank/docs/tarn$RANDOM")
            return op.status

        hand_s, tarn_s, _ = _side_by_side(by_hand, tarn, rounds=2)
        guest.sh("rm -rf /tank/docs/byhand* /tank/docs/tarn* && zpool sync tank")
        what = "cloning on" if cloning == "1" else "cloning off"
        names = (f"restore_lab_cp_by_hand_bclone{cloning}", f"restore_lab_tarn_bclone{cloning}",
                 f"restore_lab_tarn_over_cp_bclone{cloning}")  # fmt: skip
        yield from by_hand_and_tarn(names, hand_s, tarn_s, (f"cp -a, {what}", f"Tarn's restore, {what}", "goal <= 1.1"))
    guest.reset()


def lab_versions():
    """A file changed in every tenth of 1,000 snapshots: one versions pass over all of them (limit 1,000), the most
    of the dataset's snapshots mounted at once during it (the reader counts them) and its time."""
    found = lab_host("restore versions")
    if found is None:
        return
    guest, host = found
    from pools.services import inventory_refresh
    from recovery import services

    started = time.monotonic()
    # one `zfs snapshot` a name: a channel program makes only one snapshot of a dataset a transaction group
    guest.sh(
        "zpool create -f tank /dev/disk/by-id/virtio-zfsdisk1 && zfs create tank/docs && "
        f"for i in $(seq -w 0 {SNAPSHOTS - 1}); do case $i in *0) echo v$i > /tank/docs/report.txt;; esac; "
        "zfs snapshot tank/docs@s$i || exit 1; done",
        timeout=3600,
    )
    yield "restore_lab_make_snapshots", time.monotonic() - started, "s", f"{SNAPSHOTS} snapshots"
    inventory_refresh(host=host)
    where = services.where(host=host, dataset="tank/docs", path=raw("report.txt"))
    started = time.monotonic()
    found = services.versions(where=where, limit=SNAPSHOTS)
    seconds = time.monotonic() - started
    left = guest.sh("grep -c ' /tank/docs/.zfs/snapshot/' /proc/mounts || true").strip()
    yield "restore_lab_versions_snapshots", found.looked, "count", f"goal {SNAPSHOTS}"
    yield "restore_lab_versions_found", len(found.versions), "count", "distinct versions"
    yield "restore_lab_versions_most_mounted", found.most_mounted, "count", "goal <= 1 (this reader's bound)"
    yield "restore_lab_versions_left_mounted", int(left or 0), "count", "goal 0"
    yield "restore_lab_versions_seconds", seconds, "s", f"one pass over {SNAPSHOTS}, one mounted at a time"
    guest.reset()


CHECKS = [lab_listing, lab_restore, lab_versions]
