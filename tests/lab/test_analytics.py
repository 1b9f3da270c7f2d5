"""Sampling the lab: one command returns pool, vdev, dataset, ARC and link counters that move when fio writes, and
this machine's smbclient (SMB, from 10.0.2.2) and an NFS mount in the guest (from 127.0.0.1) show up as separate
clients, each with its own throughput, the SMB one named by its user and share."""

import subprocess
import time

import pytest

from analytics import series, services
from analytics.models import Sample, SamplerState
from hostlib import sampler
from shares import services as share_services
from tests.conftest import require_tool

pytestmark = pytest.mark.lab
MIB = 1 << 20
SIZE = 48  # MiB read by each client (96 took ~20 s more of emulation for nothing the 15 % bound needs)


def smb_bytes_sent(guest) -> int:
    rows = sampler.parse_ss(guest.sh("ss -t -i -n -H state established '( sport = :445 )'"))
    return sum(row[3] for row in rows)


def test_sampling_moves_with_fio_and_tells_smb_and_nfs_clients_apart(guest, shared, lab_host):
    shared(
        share_services.smb_share_save_start,
        data={"name": "docs", "dataset": "tank/docs", "path": "/tank/docs", "valid_users": "alice"},
    )
    shared(
        share_services.nfs_export_save_start,
        data={"dataset": "tank/other", "clients": "127.0.0.1", "squash": "root_squash"},
    )
    guest.sh(f"head -c {SIZE}M /dev/urandom > /tank/docs/big && cp /tank/docs/big /tank/other/big && sync")
    guest.sh("mkdir -p /mnt/other && mount -t nfs -o vers=3 127.0.0.1:/tank/other /mnt/other")
    # smbclient keeps its session open on stdin, so its connection is there in both samples
    smb = subprocess.Popen(
        [
            require_tool("smbclient"),
            "//127.0.0.1/docs",
            "-p",
            guest.env["LAB_SMB_PORT"],
            "-U",
            "alice%alice-password-1",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while not smb_bytes_sent(guest) and time.monotonic() < deadline:  # logged in
            time.sleep(0.5)
        assert services.sample_take(host=lab_host) is None  # the first sample keeps the counters only
        before = SamplerState.objects.get(pk=lab_host.pk).counters
        started = smb_bytes_sent(guest)
        smb.stdin.write("get big /dev/null\n")
        smb.stdin.flush()
        guest.sh("dd if=/mnt/other/big of=/dev/null bs=1M status=none")
        guest.sh("fio --name=w --directory=/tank/docs --rw=write --bs=1M --size=64M --end_fsync=1 >/dev/null")
        while smb_bytes_sent(guest) - started < SIZE * MIB and time.monotonic() < deadline + 60:
            time.sleep(0.5)
        row = services.sample_take(host=lab_host)
    finally:
        smb.communicate("quit\n", timeout=30)
        guest.sh("umount /mnt/other")
    after = SamplerState.objects.get(pk=lab_host.pk).counters
    seconds = after["t"] - before["t"]
    values = series.unpack(row.values)
    moved = {k: v * seconds / MIB for k, v in values.items() if k.endswith("bps")}
    print(f"sample: round trip {after['round_trip_ms']:.0f} ms, CPU on the guest {after['cost_cpu_ms']:.0f} ms")
    print({k: round(v, 1) for k, v in moved.items() if v > 1})
    assert moved["smb_client|10.0.2.2|read_bps"] == pytest.approx(SIZE, rel=0.15)
    assert moved["smb_share|docs|read_bps"] == moved["smb_user|alice|read_bps"] == moved["smb_client|10.0.2.2|read_bps"]
    assert moved["nfs_client|127.0.0.1|read_bps"] == pytest.approx(SIZE, rel=0.15)
    assert "nfs_client|10.0.2.2|read_bps" not in moved and "smb_client|127.0.0.1|read_bps" not in moved
    assert moved["nfs_export|/tank/other|read_bps"] == moved["nfs_client|127.0.0.1|read_bps"]  # mountd's rmtab
    assert moved["pool|tank|w_bps"] >= 64 and moved["dataset|tank/docs|w_bps"] >= 63  # fio's 64 MiB reached disk
    assert max(v for k, v in moved.items() if k.startswith("link|") and k.endswith("tx_bps")) >= SIZE * 0.9
    assert values["arc||size"] > 0 and values["pool|tank|w_ops"] > 0
    assert Sample.objects.filter(host=lab_host).count() == 1 and not after["errors"]
