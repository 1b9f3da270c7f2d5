"""Issue 24 figures, between the two lab guests over their wire (UDP between two QEMUs, both emulated):

- a full raw send of TARN_PERF_REPLICATION_MIB (default 512) MiB of incompressible data through a Tarn task
  against the same `zfs send -w | ssh -c aes128-gcm@openssh.com | zfs receive -s -u` run by hand, interleaved;
- a run with a bandwidth limit of half the by-hand rate, its rate read every 5 s;
- 100 datasets with nothing new: a recursive task's run (one listing per side);
- the wire cut at ~50 % for longer than the sender's probes: the run resumes once it is back; what was re-sent;
- FAULTS faults of three kinds at random moments of a run's transfer (the wire cut for longer than the sender's
  probes, `zfs send` killed on the source, `zfs receive` killed on the target), each run repeated until it
  succeeds: the source unchanged, the target's snapshots' guids the source's, and the target's pool scrubbed clean.
"""

import base64
import json
import os
import random
import statistics
import threading
import time

from tests.perf.foundation import lab_host, run_operations_inline

MIB = int(os.environ.get("TARN_PERF_REPLICATION_MIB", "512"))
ROUNDS = 3
SOURCE, TARGET = "10.78.0.1", "10.78.0.2"
TARGET_MAC = "52:54:00:12:35:59"
DISK = "/dev/disk/by-id/virtio-zfsdisk{}".format


def _nic(t, mac: str) -> str:
    return next(x["ifname"] for x in json.loads(t.run(["ip", "-j", "link"]).stdout) if x.get("address") == mac)


_READY: dict = {}


def _setup():
    """Both guests, the wire, the source's data, the pair: made once per `make perf` process."""
    if _READY:
        return _READY
    found = lab_host("replication")
    if found is None:
        return None
    first, host = found
    from tests.support.lab import lab_up
    from tests.support.lab_fixtures import SECOND

    second = lab_up(overrides=SECOND)
    second.reset()
    run_operations_inline()
    from appliance.connect import transport_for
    from appliance.services import host_refresh_facts
    from hostlib import replication
    from pools.services import inventory_refresh
    from replication import services
    from replication.models import Pair

    target_host = second.add_host(name="lab2")
    src, dst = transport_for(host), transport_for(target_host)
    nic1, nic2 = _nic(src, first.env["LAB_REP_MAC"]), _nic(dst, second.env["LAB_REP_MAC"])
    first.sh(f"ip link set {nic1} up && ip addr add {SOURCE}/24 dev {nic1}")
    second.sh(f"ip link set {nic2} address {TARGET_MAC} && ip link set {nic2} up && ip addr add {TARGET}/24 dev {nic2}")
    first.sh(
        f"zpool create -f tank {DISK(1)} {DISK(2)} && zfs create tank/docs && "
        f"head -c {MIB}M /dev/urandom > /tank/docs/big && zfs snapshot tank/docs@a && zfs create tank/many && "
        "for i in $(seq -w 0 99); do zfs create tank/many/d$i; done && zfs snapshot -r tank/many@s",
        timeout=1800,
    )
    second.sh(f"zpool create -f backup {DISK(1)} {DISK(2)} && zfs create backup/lab")
    with open(first.env["LAB_SSH_KEY"], "rb") as fh:  # the lab's root key, for the by-hand pipe
        key = base64.b64encode(fh.read()).decode()
    first.sh(f"umask 077 && echo {key} | base64 -d > /root/.ssh/lab_id")
    for h in (host, target_host):
        host_refresh_facts(host=h)
        inventory_refresh(host=h)
    services.pair_start(source=host, target=target_host, address=TARGET, root="backup/lab", user=None, quota="4G")
    pair = Pair.objects.get()
    stream = replication.estimate(src, "tank/docs@a").total
    _READY.update(first=first, second=second, host=host, src=src, dst=dst, pair=pair, stream=stream)
    return _READY


def _through_tarn(ctx, name: str, **task) -> tuple[float, float]:
    """A task's whole run of the stream, and its transfer alone (tarn-send's own first and last timestamps)."""
    from appliance.connect import transport_for
    from hostlib import replication
    from replication import services
    from replication.models import TaskRun

    made = services.task_save(pair=ctx["pair"], source_dataset="tank/docs", target_name=name, **task)
    started = time.monotonic()
    op = services.task_run_start(task=made, user=None)
    seconds = time.monotonic() - started
    run = TaskRun.objects.get(operation=op)
    assert run.status == "succeeded", (run.status, run.message)
    progress = replication.send_progress(transport_for(ctx["host"]), made.pk)
    wire = progress["updated"] - progress["started"]
    return ctx["stream"] / seconds / (1 << 20), progress["total"] / wire / (1 << 20)


def replication_figures():
    ctx = _setup()
    if ctx is None:
        return
    from appliance.connect import transport_for
    from hostlib import replication
    from replication import services

    first, host, dst, pair, stream = ctx["first"], ctx["host"], ctx["dst"], ctx["pair"], ctx["stream"]

    def by_hand() -> float:
        dst.run(["zfs", "destroy", "-r", "--", "backup/hand"], check=False, mutating=True)
        started = time.monotonic()
        first.sh(
            "zfs send -w tank/docs@a | ssh -i /root/.ssh/lab_id -o StrictHostKeyChecking=no "
            f"-o UserKnownHostsFile=/dev/null -c aes128-gcm@openssh.com root@{TARGET} zfs receive -s -u backup/hand",
            timeout=3600,
        )
        return stream / (time.monotonic() - started) / (1 << 20)

    def through_tarn(name: str, **task) -> tuple[float, float]:
        return _through_tarn(ctx, name, **task)

    hand, tarn, wire = [], [], []
    for i in range(ROUNDS):  # interleaved: the emulated guests drift, both sides alike
        hand.append(by_hand())
        whole, transfer = through_tarn(f"full{i}")
        tarn.append(whole)
        wire.append(transfer)
    yield "replication_stream_size", stream / (1 << 20), "MiB", f"raw zfs send of {MIB} MiB from /dev/urandom"
    yield "replication_by_hand_rate", statistics.median(hand), "MiB/s", "zfs send -w | ssh | zfs receive, median"
    yield "replication_tarn_rate", statistics.median(tarn), "MiB/s", "a task's whole run (listing, plan, holds)"
    ratio = statistics.median(t / h for t, h in zip(tarn, hand, strict=True))
    yield "replication_tarn_to_hand_ratio", ratio, "x", "goal >= 0.9 (pairs of interleaved runs)"
    yield "replication_tarn_transfer_rate", statistics.median(wire), "MiB/s", "tarn-send's transfer alone, median"
    ratio = statistics.median(w / h for w, h in zip(wire, hand, strict=True))
    yield "replication_transfer_to_hand_ratio", ratio, "x", "the transfer alone against the pipe by hand"

    limit = int(statistics.median(hand) * (1 << 20) / 2)
    rates, done = [], threading.Event()

    def watch(task_pk: int) -> None:
        """Every ~5 s, tarn-send's own count and the moment it wrote it (a read takes a while: never divide by 5)."""
        t, last = transport_for(host), None
        while not done.wait(5):
            progress = replication.send_progress(t, task_pk)
            now = (progress.get("total"), progress.get("updated"))
            if None not in now and last is not None and now[1] - last[1] >= 4:
                rates.append((now[0] - last[0]) / (now[1] - last[1]))
                last = now
            elif None not in now and last is None:
                last = now

    made = services.task_save(pair=pair, source_dataset="tank/docs", target_name="limited", limit=limit)
    watcher = threading.Thread(target=watch, args=(made.pk,))
    watcher.start()
    try:
        services.task_run_start(task=made, user=None)
    finally:
        done.set()
        watcher.join()
    steady = rates[1:-1] or rates  # the first and last windows hold the start and the end
    off = [abs(r - limit) / limit * 100 for r in steady]
    yield "replication_limit", limit / (1 << 20), "MiB/s", "half the by-hand rate"
    yield "replication_limited_rate_median", statistics.median(steady) / (1 << 20), "MiB/s", "per 5 s windows"
    yield "replication_limit_worst_5s_off", max(off), "%", f"goal within 10 % ({len(steady)} windows)"


def tcp_figures():
    """The same task's transfer through ssh (aes128-gcm) and with the data in the clear over TCP, interleaved."""
    ctx = _setup()
    if ctx is None:
        return
    ssh, tcp = [], []
    for i in range(ROUNDS):
        ssh.append(_through_tarn(ctx, f"ssh{i}")[1])
        tcp.append(_through_tarn(ctx, f"tcp{i}", transport="tcp")[1])
    yield "replication_ssh_transfer_rate", statistics.median(ssh), "MiB/s", "the transfer through ssh, median"
    yield "replication_tcp_transfer_rate", statistics.median(tcp), "MiB/s", "the data in the clear over TCP, median"
    ratio = statistics.median(t / s for t, s in zip(tcp, ssh, strict=True))
    yield "replication_tcp_to_ssh_ratio", ratio, "x", "what ssh's cipher costs here (pairs of interleaved runs)"


def many_figures():
    ctx = _setup()
    if ctx is None:
        return
    from replication import services
    from replication.models import TaskRun

    pair = ctx["pair"]
    many = services.task_save(pair=pair, source_dataset="tank/many", target_name="many", recursive=True)
    started = time.monotonic()
    services.task_run_start(task=many, user=None)
    yield (
        "replication_100_datasets_first_run",
        time.monotonic() - started,
        "s",
        "101 full streams on one shared SSH connection",
    )
    started = time.monotonic()
    op = services.task_run_start(task=many, user=None)
    seconds = time.monotonic() - started
    assert TaskRun.objects.get(operation=op).outcome == "nothing"
    yield (
        "replication_100_datasets_nothing_new",
        seconds,
        "s",
        "goal <= 10 s (the source listed once; Tarn's record says nothing is new)",
    )


def cut_figures():
    ctx = _setup()
    if ctx is None:
        return
    from appliance.connect import transport_for
    from hostlib import replication
    from replication import services
    from replication.models import TaskRun

    first, host, pair, stream = ctx["first"], ctx["host"], ctx["pair"], ctx["stream"]
    cut = services.task_save(pair=pair, source_dataset="tank/docs", target_name="cut")

    def pull_the_wire() -> None:
        t = transport_for(host)
        while replication.send_progress(t, cut.pk).get("total", 0) < stream / 2:
            time.sleep(0.5)
        first.monitor("set_link rep0 off")
        time.sleep(45)  # longer than the sender's probes (3 x 10 s): the transfer fails, it does not just pause
        first.monitor("set_link rep0 on")

    cutter = threading.Thread(target=pull_the_wire)
    cutter.start()
    started = time.monotonic()
    op = services.task_run_start(task=cut, user=None)
    seconds = time.monotonic() - started
    cutter.join()
    run = TaskRun.objects.get(operation=op)
    assert run.status == "succeeded", (run.status, run.message)
    yield "replication_cut_run_seconds", seconds, "s", "cut at ~50 % for 45 s, resumed from the token"
    yield "replication_cut_resent", max(run.sent - stream, 0) / stream * 100, "% of the stream", "goal <= 1 %"


FAULTS = int(os.environ.get("TARN_PERF_REPLICATION_FAULTS", "20"))


def faults_figures():
    ctx = _setup()
    if ctx is None:
        return
    from appliance.connect import transport_for
    from hostlib import replication
    from replication import services
    from replication.models import TaskRun

    first, second, host, dst, pair = ctx["first"], ctx["second"], ctx["host"], ctx["dst"], ctx["pair"]
    src = transport_for(host)
    rng = random.Random(int(os.environ.get("TARN_PERF_REPLICATION_SEED", "24")))
    first.sh("zfs create tank/faults && head -c 4M /dev/urandom > /tank/faults/0 && zfs snapshot tank/faults@f00")
    from pools.services import inventory_refresh

    inventory_refresh(host=host)
    task = services.task_save(pair=pair, source_dataset="tank/faults", target_name="faults")
    faults, runs, resent, lost = {}, 0, [], 0

    def inject(kind: str, after: int) -> None:
        """The fault once the run's transfer has moved `after` bytes (none if it ends first)."""
        while (progress := replication.send_progress(src, task.pk)).get("total", 0) < after:
            if progress.get("state") in ("done", "failed"):
                return
            time.sleep(0.3)
        faults[kind] = faults.get(kind, 0) + 1
        if kind == "cut":
            first.monitor("set_link rep0 off")
            time.sleep(40)  # longer than the sender's probes (3 x 10 s)
            first.monitor("set_link rep0 on")
        elif kind == "kill-send":
            first.sh("pkill -KILL -f '^zfs send' || true")
        else:
            second.sh("pkill -KILL -f '^zfs receive' || true")

    for i in range(1, FAULTS + 1):
        mib = rng.randint(6, 16)
        first.sh(f"head -c {mib}M /dev/urandom > /tank/faults/{i} && zfs snapshot tank/faults@f{i:02}")
        kind = rng.choice(["cut", "kill-send", "kill-receive"])
        src.remove_file(replication.progress_path(task.pk))  # the last run's "done" is not this one's
        injector = threading.Thread(target=inject, args=(kind, int(rng.uniform(0.1, 0.9) * mib * (1 << 20))))
        injector.start()
        sent = 0
        for _ in range(5):  # a run gives up after three attempts; the next one goes on from the token
            op = services.task_run_start(task=task, user=None)
            run = TaskRun.objects.get(operation=op)
            runs, sent = runs + 1, sent + run.sent
            if run.status == "succeeded":
                break
        injector.join()
        assert run.status == "succeeded", (kind, run.status, run.message)
        resent.append(max(sent - mib * (1 << 20), 0) / (mib * (1 << 20)) * 100)
        on_source = {
            v.name: v.guid for v in replication.listing(src, "tank/faults", recursive=False)["tank/faults"].snapshots()
        }
        on_target = {
            v.name: v.guid
            for v in replication.listing(dst, "backup/lab/faults", recursive=False)["backup/lab/faults"].snapshots()
        }
        lost += on_source != on_target
    second.sh("zpool scrub -w backup")
    health = second.sh("zpool status -x backup")
    yield (
        "replication_faults_injected",
        sum(faults.values()),
        "faults",
        ", ".join(f"{k} {v}" for k, v in sorted(faults.items())),
    )
    yield "replication_faults_runs", runs, "runs", "runs until every snapshot was across"
    yield "replication_faults_data_lost", lost, "snapshots sets differing", "goal 0 (guids compared after each)"
    yield "replication_faults_resent_median", statistics.median(resent), "% of a stream", "sent again after a fault"
    yield "replication_faults_scrub_clean", float("healthy" in health), "(1 = yes)", health.strip()[:60]


CHECKS = [replication_figures, tcp_figures, many_figures, cut_figures, faults_figures]
