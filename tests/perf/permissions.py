"""Issue 43 figures: a recursive ACL apply over 100,000 files, Tarn's helper (each file opened without following a
link, changed through its descriptor) against `setfacl -R` by hand on the same tree, in turns; the quota usage report
for 1,000 users x 20 datasets (p95, gunicorn under wrk, from Tarn's copy); and in the lab, one read of
`zfs userspace` on a dataset with 10,000 owners, Tarn's (over SSH, parsed, stored) against the command alone."""

import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from tests.perf.directory import _side_by_side
from tests.perf.foundation import admin_session_cookie, lab_host, tarn_served, wrk

FILES = 100_000
USERS, DATASETS = 1_000, 20
OWNERS = 10_000


def acl_walk_rate():
    """This machine's disk (ext4): the same tree, Tarn's walk and setfacl -R taking turns, three rounds each; each
    round sets an ACL the tree does not have yet (so every file is written by both)."""
    from hostlib import acl, acl_helper

    root = Path(tempfile.mkdtemp(prefix="tarn-perf-acl-", dir="/var/tmp"))
    try:
        tree = root / "tree"
        for d in range(FILES // 1000):
            folder = tree / f"d{d:03d}"
            folder.mkdir(parents=True)
            for f in range(1000):
                (folder / f"f{f}").touch()
        rounds = iter(range(1000))

        def by_hand():
            n = next(rounds)
            subprocess.run(["setfacl", "-R", "-P", "-m", f"u:{2000 + n}:rw-", str(tree)], check=True)

        def tarn():
            n = next(rounds)
            wanted = acl.spec(acl.build(6, 4, 0, {2000 + n: 6}, {}), None)
            walk = acl_helper.Walk(acl_helper.Spec(wanted), True, str(root / "status.json"))
            walk.run(str(root), ["tree"])
            return walk.counts["files"]

        hand_s, tarn_s, files = _side_by_side(by_hand, tarn)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    yield "permissions_walk_files", files, "count", f"goal {FILES}"
    yield "permissions_setfacl_by_hand", statistics.median(hand_s), "s", f"setfacl -R -P -m over {FILES} files"
    yield "permissions_tarn_walk", statistics.median(tarn_s), "s", "Tarn's helper, the same tree"
    yield (
        "permissions_walk_rate_vs_setfacl",
        statistics.median(hand_s) / statistics.median(tarn_s),
        "x",
        "goal >= 0.9 (Tarn's files per second over setfacl's)",
    )


def report_p95():
    admin_session_cookie()
    from django.utils import timezone

    from appliance.models import Host
    from permissions.models import QuotaUse

    host = Host.objects.get_or_create(name="perf-quotas", defaults={"address": "perf.example"})[0]
    if not QuotaUse.objects.filter(host=host).exists():
        now = timezone.now()
        QuotaUse.objects.bulk_create(
            [
                QuotaUse(
                    host=host,
                    dataset=f"tank/d{d:02d}",
                    kind="user",
                    name=f"user{u:04d}",
                    used=(u * 7919 + d) << 20,
                    quota=(10 << 30) if u % 3 else None,
                    percent=(((u * 7919 + d) << 20) * 100 / (10 << 30)) if u % 3 else -1.0,
                    read_at=now,
                )
                for u in range(USERS)
                for d in range(DATASETS)
            ],
            batch_size=5000,
        )
    cookie = admin_session_cookie(host_id=host.pk)
    with tarn_served() as base:
        for name, path in [
            ("first_page", "/permissions/quotas/"),
            ("search", "/permissions/quotas/?kind=user&q=user07"),
        ]:
            p95, rate, errors = wrk(f"{base}{path}", cookie, clients=10, pause_ms=500, seconds=20)
            yield (
                f"quota_report_{name}_p95_{USERS}x{DATASETS}",
                p95,
                "ms",
                "goal <= 150 ms from Tarn's copy; 10 clients",
            )
            yield f"quota_report_{name}_failed", errors, "count", "goal 0"


def lab_userspace():
    """The lab: a dataset where 10,000 uids own a file each; `zfs userspace -Hp` by hand over SSH against Tarn's read
    of it (the same command over Tarn's SSH transport, parsed, stored), in turns."""
    found = lab_host("permissions")
    if found is None:
        return
    guest, host = found
    from django.utils import timezone

    from appliance.connect import transport_for
    from hostlib import quotas
    from permissions.services.quotas import _store

    started = time.monotonic()
    guest.sh(
        "zpool create -f tank /dev/disk/by-id/virtio-zfsdisk1 && zfs create tank/owners && "
        f"python3 -c \"import os\nfor u in range({OWNERS}):\n p=f'/tank/owners/f{{u}}'\n open(p,'w').write('x')\n "
        'os.chown(p, 100000 + u, 100000 + u)" && sync && sleep 6',
        timeout=1800,
    )
    yield "permissions_lab_make_owners", time.monotonic() - started, "s", f"{OWNERS} files, one owner each"
    t = transport_for(host, read_only=True)
    argv = " ".join(quotas.space_argv("user", "tank/owners"))
    counted = []

    def tarn():
        rows, _ = quotas.space(t, "user", "tank/owners")
        _store(host, "tank/owners", "user", rows, timezone.now())
        counted.append(len(rows))
        return len(rows)

    hand_s, tarn_s, rows = _side_by_side(lambda: guest.sh(f"{argv} >/dev/null"), tarn)
    guest.reset()
    yield "permissions_lab_userspace_rows", rows, "count", f"goal >= {OWNERS}"
    yield "permissions_lab_userspace_by_hand", statistics.median(hand_s), "s", "zfs userspace -Hp over SSH"
    yield "permissions_lab_userspace_tarn", statistics.median(tarn_s), "s", "Tarn's read: the same, parsed and stored"
    yield (
        "permissions_lab_userspace_over_by_hand",
        statistics.median(tarn_s) / statistics.median(hand_s),
        "x",
        "goal <= 1.2",
    )


def lab_walk_rate():
    """The lab: 100,000 files on a dataset with POSIX ACLs; `setfacl -R -P -m` (this machine's Debian 12 binary,
    copied into the guest: the lab image has no acl package) against Tarn's helper, each over SSH, in turns."""
    found = lab_host("permissions walk")
    if found is None:
        return
    guest, host = found
    import json as _json

    from appliance.connect import transport_for
    from hostlib import acl

    setfacl = Path("/usr/bin/setfacl").read_bytes()
    started = time.monotonic()
    guest.sh(
        "zpool create -f tank /dev/disk/by-id/virtio-zfsdisk1 && zfs create -o acltype=posix -o xattr=sa tank/t && "
        f"python3 -c \"import os\nfor d in range({FILES // 1000}):\n os.mkdir(f'/tank/t/d{{d:03d}}')\n for f in range(1000): "
        "open(f'/tank/t/d{d:03d}/f{f}', 'w').close()\"",
        timeout=3600,
    )
    yield "permissions_lab_make_files", time.monotonic() - started, "s", f"{FILES} empty files on ZFS"
    t = transport_for(host)
    t.write_file("/usr/local/lib/tarn/setfacl", setfacl, mode=0o755)
    acl.install_helper(t)
    rounds = iter(range(1000))

    def by_hand():
        guest.sh(f"/usr/local/lib/tarn/setfacl -R -P -m u:{2000 + next(rounds)}:rw- /tank/t", timeout=3600)

    def tarn():
        wanted = acl.spec(acl.build(6, 4, 0, {2000 + next(rounds): 6}, {}), None)
        guest.sh(f"echo '{_json.dumps({'root': '/tank', 'parts': ['t'], 'spec': wanted})}' > /run/walk.args")
        said = guest.sh(f"python3 {acl.HELPER} apply /run/walk.args /run/walk.json", timeout=3600)
        return _json.loads(said)["files"]

    hand_s, tarn_s, files = _side_by_side(by_hand, tarn, rounds=2)
    guest.reset()
    yield "permissions_lab_walk_files", files, "count", f"goal {FILES}"
    yield "permissions_lab_setfacl_by_hand", statistics.median(hand_s), "s", "setfacl -R -P -m over SSH"
    yield "permissions_lab_tarn_walk", statistics.median(tarn_s), "s", "Tarn's helper over SSH"
    yield (
        "permissions_lab_walk_rate_vs_setfacl",
        statistics.median(hand_s) / statistics.median(tarn_s),
        "x",
        "goal >= 0.9",
    )


CHECKS = [acl_walk_rate, report_p95, lab_userspace, lab_walk_rate]
