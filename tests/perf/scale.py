"""Issue 46 figures (`make perf scale`): a million snapshots on one host, beside the same figures at 100,000.

The listings are the lab's own `zfs list` output as captured in tests/fixtures/host (same argv, same format),
replicated to 10,000 datasets with 10 or 100 snapshots each, and saved by the refresh's own code in a process of its
own (tests.perf.refresh_child: its wall times and peak RSS): into an empty inventory, then again with nothing changed
(every periodic refresh of a quiet pool), then with one dataset's snapshots changed. Then the snapshot pages and API
under wrk at 5 clients."""

import json
import tempfile
from pathlib import Path

from tests.perf.foundation import ROOT, admin_session_cookie, tarn_served, warm, wrk
from tests.perf.storage import refresh_db_side

FIXTURES = ROOT / "tests" / "fixtures" / "host"
DATASETS = 10_000
SIZES = (100_000, 1_000_000)  # snapshots: the last figure's scale, then issue 46's


def outputs(datasets: int, snapshots: int) -> tuple[str, str]:
    """`zfs list -j` of the pool with `datasets` filesystems tank/b/d<i> (the captured tank/data, with the
    properties the inventory lists as the captured `zfs get -j` gives them) and
    `zfs list -Hp -t snapshot` lines, `snapshots // datasets` a dataset (the captured lines' values in turn)."""
    from hostlib.zfs import LIST_PROPERTIES

    raw = json.loads((FIXTURES / "zfs_list.json").read_text())
    (captured,) = json.loads((FIXTURES / "zfs_get.json").read_text())["datasets"].values()  # every property
    props = captured["properties"]
    template = {**raw["datasets"]["tank/data"], "properties": {p: props[p] for p in LIST_PROPERTIES if p in props}}
    out = {k: v for k, v in raw["datasets"].items() if "@" not in k}
    out["tank/b"] = {**template, "name": "tank/b"}
    for i in range(datasets):
        out[f"tank/b/d{i}"] = {**template, "name": f"tank/b/d{i}"}
    raw["datasets"] = out
    sample = [line.split("\t", 1)[1] for line in (FIXTURES / "zfs_snapshots_same_second.txt").read_text().splitlines()]
    per = snapshots // datasets
    lines = "".join(f"tank/b/d{i}@s{r}\t{sample[(i + r) % len(sample)]}\n" for i in range(datasets) for r in range(per))
    return json.dumps(raw), lines


def snapshots_scale():
    admin_session_cookie()  # migrates the perf database
    from appliance.models import Host
    from pools.models import Dataset, Pool

    for snapshots in SIZES:
        label = f"{DATASETS // 1000}k_datasets_{snapshots // 1000}k_snapshots"
        Pool.objects.filter(host__name="scale").delete()
        host = Host.objects.get_or_create(name="scale", defaults={"transport": "local", "address": "localhost"})[0]
        result = refresh_db_side(host.name, *outputs(DATASETS, snapshots))
        yield f"scale_db_side_first_{label}", result["seconds"], "s", "parse + save into an empty inventory"
        yield (
            f"scale_db_side_unchanged_{label}",
            result["unchanged_seconds"],
            "s",
            "goal <= 10 s at 1M: nothing changed",
        )
        if "one_changed_seconds" in result:
            yield f"scale_db_side_one_changed_{label}", result["one_changed_seconds"], "s", "one dataset's snapshots"
        yield f"scale_refresh_peak_rss_{label}", result["peak_rss_mb"], "MB", "goal <= 300 MB at 1M (Django included)"
        assert Dataset.objects.filter(host=host).count() >= DATASETS

        cookie = admin_session_cookie(host_id=host.pk)
        pages = [
            ("snapshot_page_first", "/pools/snapshots/"),
            ("snapshot_page_sorted_by_name", "/pools/snapshots/?order=name"),
            ("snapshot_page_filtered", "/pools/snapshots/?q=d4321"),
            ("snapshot_api_first", "/api/v1/snapshots/?host=scale"),
            ("snapshot_api_dataset", "/api/v1/snapshots/?host=scale&dataset=tank/b/d4321"),
            ("snapshot_api_filtered", "/api/v1/snapshots/?host=scale&q=s3"),
        ]
        with tarn_served() as base:
            for name, path in pages:
                warm(base + path, cookie)
                p95, _, errors = wrk(base + path, cookie, clients=5, pause_ms=200, seconds=15)
                yield f"scale_{name}_p95_{label}", p95, "ms", f"goal <= 150 ms at 1M; {int(errors)} failed"


FLEET_HOSTS, FLEET_DATASETS = 50, 1000


def fleet_scale():
    """50 hosts × 1,000 datasets (a pool each, 4 disks, an alert on every fifth): the fleet page and its API under
    wrk, 50 clients each reloading every 0.5-1.5 s."""
    admin_session_cookie()
    from django.utils import timezone

    from analytics.models import Alert
    from appliance.models import Host
    from health.models import DiskHealth
    from pools.models import Dataset, Pool

    now = timezone.now()
    for i in range(FLEET_HOSTS):
        host, made = Host.objects.get_or_create(
            name=f"fleet{i:02d}", defaults={"address": f"192.0.2.{i + 1}", "observed_at": now}
        )
        if not made:
            continue
        pool = Pool.objects.create(host=host, name="tank", guid=str(i), state="ONLINE", capacity=i * 2, observed_at=now)
        Dataset.objects.bulk_create(
            [Dataset(host=host, pool=pool, name=f"tank/d{n}", type="filesystem", observed_at=now) for n in range(FLEET_DATASETS)]
        )  # fmt: skip
        DiskHealth.objects.bulk_create(
            [DiskHealth(host=host, device=f"/dev/sd{c}", name=f"sd{c}", state="ok") for c in "abcd"]
        )
        if i % 5 == 0:
            Alert.objects.create(
                host=host, rule="pool_capacity", subject="tank", level="warning", message="tank is full"
            )
    cookie = admin_session_cookie()
    with tarn_served() as base:
        for name, path in [("fleet_page", "/fleet/"), ("fleet_page_sorted", "/fleet/?order=capacity"),
                           ("fleet_api", "/api/v1/fleet/")]:  # fmt: skip
            warm(base + path, cookie)
            p95, rate, errors = wrk(base + path, cookie, clients=50, pause_ms=1000, seconds=20)
            yield (
                f"scale_{name}_p95_{FLEET_HOSTS}_hosts",
                p95,
                "ms",
                f"goal <= 150 ms at 50 clients; {rate:.0f} req/s, {int(errors)} failed",
            )


def ingestion_scale():
    """The sampler's ingestion on Tarn's side for 50 hosts at 10 s: each host's document (the lab's two captured
    samples in turn, its time moved on 10 s each round) parsed, checked, turned into rates and stored, as
    sample_take does it; CPU time of this process (no SSH: the host's side is measured by `make perf analytics`)."""
    import time

    admin_session_cookie()
    from analytics.services import sample_take
    from appliance.models import Host
    from hostlib.runner import CommandResult, Transport

    docs = [
        json.loads((FIXTURES / "sampler" / name).read_text()) for name in ("sample_before.json", "sample_after.json")
    ]

    class Captured(Transport):
        def __init__(self):
            super().__init__(read_only=True)
            self.round = 0

        def _execute(self, argv, **kwargs):
            doc = dict(docs[self.round % 2], t=docs[0]["t"] + 10 * self.round)
            self.round += 1
            return CommandResult(argv, 0, json.dumps(doc), "", 0.05)

    hosts = [
        Host.objects.get_or_create(name=f"sampled{i:02d}", defaults={"address": f"198.51.100.{i + 1}"})[0]
        for i in range(FLEET_HOSTS)
    ]
    transports = {h.pk: Captured() for h in hosts}
    for host in hosts:  # the first sample of each only keeps its counters
        sample_take(host=host, transport=transports[host.pk])
    rounds, started = 6, time.process_time()
    for _ in range(rounds):
        for host in hosts:
            sample_take(host=host, transport=transports[host.pk])
    per_round = (time.process_time() - started) / rounds
    yield "scale_ingest_cpu_per_sample", per_round / FLEET_HOSTS * 1000, "ms", "one host's sample, Tarn's side"
    yield (
        f"scale_ingest_cpu_share_{FLEET_HOSTS}_hosts_10s",
        per_round / 10 * 100,
        "% of one core",
        "goal <= 25 %",
    )


def turn_scale(seconds: int = 30):
    """One host's long change against another host's: a real Celery worker serving both hosts' queues with three
    processes (make run's) and with one (before): how long host B's change waits to start while the local host's
    runs (the issue's 10-minute job, shortened: with one process B waits what is left of it)."""
    import time

    admin_session_cookie()
    from appliance.models import Host, Operation
    from appliance.operations import operation_start
    from tests.support import runners  # noqa: F401 - test.pause
    from tests.support.worker import start_worker, stop_worker

    local = Host.objects.get_or_create(name="local", defaults={"transport": "local", "address": "localhost"})[0]
    other = Host.objects.get_or_create(name="turnb", defaults={"address": "192.0.2.250"})[0]

    def wait(pk, status):
        while not Operation.objects.filter(pk=pk, status=status).exists():
            time.sleep(0.1)
        return Operation.objects.get(pk=pk)

    for concurrency in (1, 3):
        with tempfile.TemporaryDirectory() as tmp:
            worker = start_worker("default,host.local,host.turnb", Path(tmp, "worker.log"), concurrency=concurrency)
            try:
                long = operation_start(kind="test.pause", subject=f"long{concurrency}", host=local, user=None,
                                       params={"seconds": seconds})  # fmt: skip
                wait(long.pk, "running")
                beside = operation_start(kind="test.pause", subject=f"b{concurrency}", host=other, user=None,
                                         params={"seconds": 0})  # fmt: skip
                done = wait(beside.pk, "succeeded")
                waited = (done.started_at - done.created_at).total_seconds()
                wait(long.pk, "succeeded")
            finally:
                stop_worker(worker)
        yield (
            f"scale_other_host_start_latency_c{concurrency}",
            waited,
            "s",
            f"host B's change while the local host's {seconds} s change runs; {concurrency} worker process(es)"
            + ("; goal <= 2 s" if concurrency > 1 else " (before)"),
        )


def _ssh_cpu(control_dir: str) -> float:
    """CPU seconds so far of the ssh shared-connection masters whose sockets are in control_dir (daemons, not this
    process's children: os.times() does not count them)."""
    import os

    total = 0.0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            if b"ssh" not in cmdline or control_dir.encode() not in cmdline:
                continue
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def fleet_ssh(rounds: int = 3):
    """Fifty hosts as real SSH endpoints: the lab guest's sshd and 49 more in it (its data address, ports 2301-2349,
    each its own host key), registered as 50 hosts with their keys pinned, so every read is a real SSH round trip to a
    real sshd and real OpenZFS (a pool of 20 datasets). Figures: the first contact of all 50 (facts: handshakes), an
    inventory refresh of all 50 by 4 threads (as 4 workers would), the sampler's rounds for 50 hosts with Tarn's side
    CPU counted whole (this process, its ssh clients and the shared connections' masters), and the fleet page over
    what was read. The guest is emulated (2 vCPUs under TCG): its side bounds the wall times, not Tarn's."""
    import os
    import time
    from concurrent.futures import ThreadPoolExecutor

    from tests.perf.foundation import lab_host

    found = lab_host("fleet over SSH")
    if found is None:
        return
    guest, lab = found
    from django.db import connections

    from analytics.services import sample_take
    from appliance.models import Host
    from appliance.services import host_refresh_facts
    from hostlib.runner import _control_dir
    from pools.services import inventory_refresh

    address = guest.env["LAB_GUEST_DATA_ADDR"].split("/")[0]
    keys = guest.sh(
        "zpool create -f tank /dev/disk/by-id/virtio-zfsdisk1 && for d in $(seq 20); do zfs create tank/d$d; done && "
        "mkdir -p /run/fleet && for i in $(seq 1 49); do ssh-keygen -q -t ed25519 -N '' -f /run/fleet/k$i && "
        f"/usr/sbin/sshd -o Port=$((2300 + i)) -o ListenAddress={address} -o HostKey=/run/fleet/k$i "
        "-o PidFile=/run/fleet/p$i -o MaxStartups=100 && echo $i $(cut -d' ' -f1,2 /run/fleet/k$i.pub) || exit 1; done",
        timeout=600,
    )
    hosts = [lab]
    for line in keys.splitlines():
        n, key = line.split(" ", 1)
        hosts.append(Host.objects.update_or_create(name=f"nas{int(n):02d}", defaults={
            "transport": "ssh", "address": address, "port": 2300 + int(n), "username": "root",
            "identity_file": lab.identity_file, "host_keys": key})[0])  # fmt: skip

    def each(work):
        def one(host):
            try:
                return work(host)
            finally:
                connections.close_all()

        with ThreadPoolExecutor(4) as pool:
            return list(pool.map(one, hosts))

    started = time.monotonic()
    each(lambda h: host_refresh_facts(host=h))
    yield "scale_fleet_ssh_first_contact_50", time.monotonic() - started, "s", "50 hosts' facts, 4 at a time"
    reached = Host.objects.filter(pk__in=[h.pk for h in hosts], facts_error="").count()
    yield "scale_fleet_ssh_reached", reached, "count", "goal 50: each its own sshd and pinned key"
    started = time.monotonic()
    each(lambda h: inventory_refresh(host=h))
    yield "scale_fleet_ssh_refresh_50", time.monotonic() - started, "s", "50 inventories read, 4 at a time"
    each(lambda h: sample_take(host=h))  # the first sample of each only keeps its counters
    control = _control_dir()
    cpu, masters, started = os.times(), _ssh_cpu(control), time.monotonic()
    for _ in range(rounds):
        each(lambda h: sample_take(host=h))
    wall, after = time.monotonic() - started, os.times()
    used = (after.user + after.system + after.children_user + after.children_system
            - cpu.user - cpu.system - cpu.children_user - cpu.children_system) + _ssh_cpu(control) - masters  # fmt: skip
    yield "scale_fleet_ssh_sample_cpu_per_host", used / rounds / len(hosts) * 1000, "ms", "Tarn's side, ssh included"
    yield (
        "scale_fleet_ssh_sample_cpu_share_50_hosts_10s",
        used / rounds / 10 * 100,
        "% of one core",
        f"goal <= 25 %; a round of 50 took {wall / rounds:.1f} s of wall time (the emulated guest's side)",
    )
    cookie = admin_session_cookie()
    with tarn_served() as base:
        warm(base + "/fleet/", cookie)
        p95, rate, errors = wrk(base + "/fleet/", cookie, clients=50, pause_ms=1000, seconds=20)
        yield "scale_fleet_ssh_page_p95", p95, "ms", f"goal <= 150 ms; {rate:.0f} req/s, {int(errors)} failed"
    Host.objects.filter(name__startswith="nas").delete()
    guest.reset()


def lab_refresh_curve(datasets: int = 100, steps: tuple[int, ...] = (10, 50, 100)):
    """The real curve in the lab guest as far as its speed allows: a pool of `datasets` filesystems, snapshotted
    recursively (`zfs snapshot -r`, one transaction a step) up to datasets × each step snapshots; at each size,
    Tarn's inventory refresh (its reads over SSH, then the database side) against `zfs list -H -p -t all` of the pool by
    hand over SSH, in turns: the first refresh at the size (the new snapshots saved), then one that finds nothing
    changed."""
    import time

    from tests.perf.directory import _side_by_side, by_hand_and_tarn
    from tests.perf.foundation import lab_host

    found = lab_host("refresh curve")
    if found is None:
        return
    guest, host = found
    from pools.models import Snapshot
    from pools.services import inventory_refresh

    guest.sh(
        "zpool create -f tank /dev/disk/by-id/virtio-zfsdisk1 && zfs create tank/b && "
        f"for d in $(seq {datasets}); do zfs create tank/b/d$d; done",
        timeout=1800,
    )
    made = 0
    for each in steps:
        guest.sh(f"for s in $(seq {made + 1} {each}); do zfs snapshot -r tank/b@s$s || exit 1; done", timeout=3600)
        made = each
        started = time.monotonic()
        inventory_refresh(host=host)
        first = time.monotonic() - started
        count = Snapshot.objects.filter(host=host).count()
        hand_s, tarn_s, _ = _side_by_side(
            lambda: guest.sh("zfs list -H -p -t all -r tank >/dev/null", timeout=600),
            lambda: inventory_refresh(host=host),
            rounds=3,
        )
        yield f"scale_lab_refresh_first_{count}_snapshots", first, "s", "the new snapshots read and saved"
        names = (f"scale_lab_zfs_list_by_hand_{count}_snapshots", f"scale_lab_refresh_unchanged_{count}_snapshots",
                 f"scale_lab_refresh_over_zfs_list_{count}_snapshots")  # fmt: skip
        yield from by_hand_and_tarn(names, hand_s, tarn_s, ("zfs list over SSH", "Tarn's refresh", "goal <= 1.1"))
    guest.reset()


CHECKS = [snapshots_scale, fleet_scale, ingestion_scale, turn_scale, fleet_ssh, lab_refresh_curve]
