"""Issue 13 figures: what one sample costs on the lab (round trip; CPU on the NAS from the sampler's own rusage and,
sshd included, from the guest's /proc/stat against an idle baseline; the share of one core at a 10 s interval); the
analytics page with 24 h of 10 s samples for one host (p95, light load); the database size of 10 hosts × 30 days of
rollups at a realistic width (one pool of three vdevs, five datasets, three links, four SMB and two NFS clients)."""

import json
import os
import random
import statistics
import time
from datetime import timedelta

from tests.perf.foundation import admin_session_cookie, lab_host, tarn_served, wrk

SAMPLES = 15


def _jiffies(lab) -> tuple[int, int]:
    f = [int(x) for x in lab.sh("head -1 /proc/stat").split()[1:9]]
    return sum(f) - f[3] - f[4], sum(f)


def sample_cost():
    found = lab_host("analytics")
    if found is None:
        return
    lab, host = found
    from appliance.connect import transport_for
    from hostlib.runner import LocalTransport
    from hostlib.sampling import sample

    lab.sh("zpool create -f tank /dev/disk/by-id/virtio-zfsdisk1 && zfs create tank/a && zfs create tank/b")
    t = transport_for(host, read_only=True)
    sample(t)  # the shared SSH connection is up
    trips, cpu = [], []
    idle0, started = _jiffies(lab), time.monotonic()
    time.sleep(20)
    idle1, idle_seconds = _jiffies(lab), time.monotonic() - started
    idle_rate = (idle1[0] - idle0[0]) / idle_seconds
    busy0, started = _jiffies(lab), time.monotonic()
    for _ in range(SAMPLES):
        data = sample(t)
        trips.append(data["round_trip_ms"])
        cpu.append(data["cost_cpu_ms"])
    busy1, seconds = _jiffies(lab), time.monotonic() - started
    total_ms = ((busy1[0] - busy0[0]) - idle_rate * seconds) * 10 / SAMPLES  # a jiffy is 10 ms (USER_HZ 100)
    yield "sample_round_trip_median", statistics.median(trips), "ms", "goal: one SSH round trip per sample"
    yield "sample_commands_per_sample", 1, "commands", "goal 1 (the shipped sampler; it runs zpool, ss inside)"
    yield "sample_cpu_self_median", statistics.median(cpu), "ms", "the sampler and its children (rusage), TCG guest"
    yield "sample_cpu_with_sshd", total_ms, "ms", "guest /proc/stat minus its idle rate, per sample"
    here = [sample(LocalTransport(read_only=True))["cost_cpu_ms"] for _ in range(SAMPLES)]
    yield "sample_cpu_self_this_machine", statistics.median(here), "ms", "the same sampler on this machine (no zpool)"
    goal = "goal <= 1 %; the emulated (TCG) guest runs ~10-30x slower than hardware"
    yield "sample_cpu_share_at_10s", total_ms / 100, "% of one core", goal


def _values(rng, busy: float) -> dict:
    v = {
        "cpu||busy_pct": 5 + 20 * busy,
        "sampler||cpu_ms": 45.0,
        "sampler||wall_ms": 120.0,
        "arc||size": 8e9,
        "arc||c_max": 16e9,
        "arc||hit_pct": 97.0 - 5 * busy,
        "nfs||ops": 300 * busy,
    }
    for m in ("r_ops", "w_ops", "r_bps", "w_bps", "r_ms", "w_ms"):
        v[f"pool|tank|{m}"] = rng.uniform(1, 1e8) * busy
    for vdev in ("raidz2-0", "sda", "sdb"):
        for m in ("r_ops", "w_ops", "r_bps", "w_bps"):
            v[f"vdev|tank/{vdev}|{m}"] = rng.uniform(1, 1e8) * busy
    for d in range(5):
        for m in ("r_ops", "w_ops", "r_bps", "w_bps"):
            v[f"dataset|tank/share{d}|{m}"] = rng.uniform(1, 1e8) * busy
    for link in ("eno1", "eno2", "br0"):
        v[f"link|{link}|rx_bps"], v[f"link|{link}|tx_bps"] = rng.uniform(1, 1e9), rng.uniform(1, 1e9)
    for proto, clients in (("smb", 4), ("nfs", 2)):
        for c in range(clients):
            for m in ("read_bps", "write_bps"):
                v[f"{proto}_client|192.168.1.{10 + c}|{m}"] = rng.uniform(1, 1e8) * busy
        for m in ("read_bps", "write_bps"):
            v[f"{proto}||{m}"] = rng.uniform(1, 4e8) * busy
    for m in ("read_bps", "write_bps"):
        v[f"smb_share|share{rng.randrange(5)}|{m}"] = rng.uniform(1, 1e8) * busy
        v[f"smb_user|user{rng.randrange(9)}|{m}"] = rng.uniform(1, 1e8) * busy
        v[f"nfs_version|4.2|{m}"] = rng.uniform(1, 1e8) * busy
    return {k: round(x, 2) if abs(x) < 1000 else round(x) for k, x in v.items()}


def page_and_size():
    admin_session_cookie()  # migrates the perf database
    from django.conf import settings
    from django.db import connection
    from django.test import Client
    from django.utils import timezone

    from analytics import series, services
    from analytics.choices import FIVE_MINUTES, HOUR, RAW
    from analytics.models import Sample, SamplerState
    from appliance.models import Host, User

    rng = random.Random(13)
    host = Host.objects.get(name="local")
    now = timezone.now()
    started = time.monotonic()
    Sample.objects.all().delete()
    Sample.objects.bulk_create(
        (
            Sample(
                host=host,
                at=now - timedelta(seconds=10 * i),
                step=RAW,
                values=series.pack(_values(rng, (i % 360) / 360)),
            )
            for i in range(8640)
        ),
        batch_size=2000,
    )
    SamplerState.objects.update_or_create(host=host, defaults={"at": now, "counters": {"cost_cpu_ms": 45}})
    services.series_maintain(now=now)
    cookie = admin_session_cookie(host.pk)  # the page shows this host (with a lab added, it is not the first)
    page = Client()
    page.force_login(User.objects.get(username="perf"))
    session = page.session
    session["host_id"] = host.pk
    session.save()
    body = page.get("/analytics/?range=1h").content
    assert body.count(b'"label": "192.168.1.1') == 0 and b"chart-smb-data" in body and b"no-samples" not in body
    yield "analytics_fill_24h", time.monotonic() - started, "s", "8,640 samples (24 h at 10 s) and their rollups"
    with tarn_served() as base:
        for name, path in (
            ("analytics_page_1h", "/analytics/?range=1h"),
            ("analytics_page_24h", "/analytics/?range=24h"),
            ("analytics_drilldown_1h_by_client", "/analytics/?range=1h&chart=smb&by=smb_client"),
            ("analytics_poll_15m", "/analytics/?range=15m"),
        ):
            p95, rate, errors = wrk(base + path, cookie, clients=10, pause_ms=1000, seconds=15)
            yield (
                f"{name}_p95",
                p95,
                "ms",
                f"goal <= 150 ms; 10 clients ~1 req/s; {rate:.0f} req/s, {int(errors)} failed",
            )

    # 10 hosts × 30 days of 5-minute and hourly averages at the same width
    started = time.monotonic()
    before = _db_bytes(settings, connection)
    for n in range(10):
        other, _ = Host.objects.get_or_create(name=f"perf{n}", defaults={"transport": "ssh", "address": f"10.9.0.{n}"})
        rows = [
            Sample(
                host=other,
                at=now - timedelta(seconds=FIVE_MINUTES * i),
                step=FIVE_MINUTES,
                values=series.pack(_values(rng, (i % 288) / 288)),
            )
            for i in range(30 * 288)
        ]
        rows += [
            Sample(host=other, at=now - timedelta(seconds=HOUR * i), step=HOUR, values=series.pack(_values(rng, 0.5)))
            for i in range(30 * 24)
        ]
        Sample.objects.bulk_create(rows, batch_size=2000)
    after = _db_bytes(settings, connection)
    per_row = len(json.dumps(series.pack(_values(rng, 0.5)), separators=(",", ":")))
    yield (
        "rollups_10_hosts_30_days",
        (after - before) / 2**20,
        "MiB",
        (
            f"{10 * 30 * (288 + 24):,} rows of ~{per_row} bytes of JSON; the 24 h of raw samples per host add "
            f"~{8640 * per_row / 2**20:.0f} MiB each; filled in {time.monotonic() - started:.0f} s"
        ),
    )
    Sample.objects.filter(host__name__startswith="perf").delete()


def _db_bytes(settings, connection) -> int:
    if connection.vendor == "sqlite":
        with connection.cursor() as cursor:
            cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return os.path.getsize(settings.DATABASES["default"]["NAME"])
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_total_relation_size('analytics_sample')")
        return cursor.fetchone()[0]


CHECKS = [sample_cost, page_and_size]
