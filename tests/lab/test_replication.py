"""Replication's data path between two guests: raw streams from the sender's tarn-send through the pair's forced
command (tarn-recv) over the wire between the two kernels; what the key may not do; a cut transfer resumed from
the target's token. Everything a NAS is asked to do here goes through hostlib's verbs over Tarn's own SSH."""

import json
import os
import shlex
import signal
import time
from datetime import timedelta

import pytest
from django.utils import timezone

from appliance.models import Operation
from appliance.operations import operation_execute, operations_reap
from appliance.services import host_refresh_facts
from hostlib import replication, send_helper
from hostlib.replication import HELPER_DIR
from pools.services import inventory_refresh
from replication import services
from replication.models import Pair, Task, TaskRun
from tests.support.lab import enter_both

pytestmark = pytest.mark.lab
D = "/dev/disk/by-id/virtio-zfsdisk{}".format
SOURCE, TARGET = "10.78.0.1", "10.78.0.2"
PAIR = 1
SPEC, PROGRESS = "/run/tarn/replication/test.json", "/run/tarn/replication/test.progress.json"


TARGET_MAC = "52:54:00:12:35:59"  # the second guest's own MAC on the wire (the saved state gives both the same)


def rep_nic(lab, mac: str = "") -> str:
    links = json.loads(lab.transport().run(["ip", "-j", "link"]).stdout)
    return next(link["ifname"] for link in links if link.get("address") == (mac or lab.env["LAB_REP_MAC"]))


@pytest.fixture
def wire(guest, guest2):
    """Source (first guest, 10.78.0.1): pool tank with tank/docs, snapshots @a (8 MiB) and @b (+2 MiB). Target
    (second guest, 10.78.0.2): pool backup with backup/lab. Pair 1 made with Tarn's verbs: the helpers on both,
    the key on the source, the target's host key pinned there, the forced-command line on the target. Made once and
    saved on both guests as "wire"."""
    source, target = guest.transport(), guest2.transport()

    def build():
        nic1, nic2 = rep_nic(guest), rep_nic(guest2)
        guest.sh(f"ip link set {nic1} up && ip addr add {SOURCE}/24 dev {nic1}")
        guest2.sh(
            f"ip link set {nic2} address {TARGET_MAC} && ip link set {nic2} up && ip addr add {TARGET}/24 dev {nic2}"
        )
        guest.sh(
            f"zpool create -f tank {D(1)} && zfs create tank/docs && head -c 8M /dev/urandom > /tank/docs/one && "
            "zfs snapshot tank/docs@a && head -c 2M /dev/urandom > /tank/docs/two && zfs snapshot tank/docs@b"
        )
        guest2.sh(f"zpool create -f backup {D(1)} && zfs create backup/lab")
        for t in (source, target):
            replication.install_helpers(t)
        public = replication.pair_make_key(source, PAIR)
        replication.pair_pin(source, PAIR, TARGET, 22, [guest2.env["LAB_HOST_KEY"]])
        replication.receiver_prepare(target, PAIR, "backup/lab")
        line = replication.authorized_line(PAIR, "backup/lab", SOURCE, public)
        replication.authorize(target, PAIR, line, keys=replication.recv_keys(PAIR))

    enter_both(guest, guest2, "wire", build)
    ssh = {
        "address": TARGET,
        "port": 22,
        "identity": replication.pair_key(PAIR),
        "known_hosts": replication.known_hosts(PAIR),
        "cipher": "aes128-gcm@openssh.com",
        "user": f"tarn-recv-{PAIR}",
    }
    return source, target, ssh


def send(source, ssh, steps, *, limit=0, background=False) -> dict | None:
    """tarn-send on the source with these steps: its last progress when it ran to the end, None when started as a
    unit in the background (as a run starts it)."""
    spec = {"steps": steps, "ssh": ssh, "limit": limit, "progress": PROGRESS}
    source.write_file(SPEC, json.dumps(spec), mode=0o600)
    source.remove_file(PROGRESS)
    argv = ["python3", f"{HELPER_DIR}/tarn-send", SPEC]
    if background:
        source.run(["systemd-run", "--unit", "tarn-repl-test", "--collect", "--quiet", "--", *argv], mutating=True)
        return None
    source.run(argv, timeout=600, mutating=True, check=False)
    return json.loads(source.read_file(PROGRESS))


def progress(source) -> dict:
    return json.loads(source.run(["cat", "--", PROGRESS], check=False).stdout or "{}")


def step(snapshot, dataset="docs", *, base="", intermediates=False) -> dict:
    argv = replication.send_argv(snapshot, base=base, intermediates=intermediates)
    return {"send": argv, "dataset": dataset, "snapshot": snapshot}


def side(t, root):
    return replication.parse_listing(t.run(replication.listing_argv(root, recursive=True)).stdout, root, recursive=True)


def guids(dataset) -> dict:
    return {v.name: v.guid for v in dataset.snapshots()}


def cut_when(guest, source, sent: int, deadline: float) -> dict:
    """Pull the wire once the sender has sent `sent` bytes; the sender's last progress once it gave up."""
    while progress(source).get("total", 0) < sent:
        assert time.monotonic() < deadline, "the transfer did not get going"
        time.sleep(0.5)
    guest.monitor("set_link rep0 off")
    cut = time.monotonic()
    while (state := progress(source)).get("state") in (None, "running"):
        if time.monotonic() > cut + 40:
            seen = guest.sh("ss -tnio; ps -eo pid,stat,wchan:24,etimes,args | grep -E 'tarn|zfs|ssh' | grep -v grep")
            raise AssertionError(f"the sender did not notice the cut in 40 s: {state}\n{seen}")
        time.sleep(0.5)
    return state


@pytest.mark.parametrize("tcp", [False, True], ids=["ssh", "tcp"])
def test_a_first_stream_cut_on_the_wire_resumes_from_the_token_and_incrementals_follow(guest, guest2, wire, tcp):
    """The wire is pulled mid-way through the first (full, raw) stream: both ends give up within seconds (the
    sender's ssh probes, the receiver's idle limit), the target keeps what came with a resume token, and once its
    receive has ended the rest is sent from that token, nothing twice. Then an incremental follows. The replica is
    read-only, never mounted, its snapshots' guids the source's, and the bytes crossed the wire between the two
    kernels, not this machine's network. The same with the stream in the clear on its own TCP connection (ssh
    carrying the request and the receive's words)."""
    source, target, ssh = wire
    nic2 = rep_nic(guest2, TARGET_MAC)
    rx = int(guest2.sh(f"cat /sys/class/net/{nic2}/statistics/rx_bytes"))
    ssh = {**ssh, "alive": 1, "idle": 3, "tcp": tcp}
    send(source, ssh, [step("tank/docs@a")], limit=1 << 20, background=True)
    try:
        state = cut_when(guest, source, 2 << 20, time.monotonic() + 90)
        assert state["state"] == "failed" and state["recv_exit"] == 255, state
        while replication.receive_busy(target, PAIR, "backup/lab/docs"):  # it drains, then ends after `idle` s
            time.sleep(0.5)
        token = side(target, "backup/lab")["backup/lab/docs"].resume_token
    finally:
        guest.monitor("set_link rep0 on")
    assert token, "the cut first stream left a resume token"
    estimate = replication.parse_estimate(source.run(replication.send_argv("", token=token, dry_run=True)).stdout)
    assert estimate.token["toname"] == "tank/docs@a"
    rest = {"send": replication.send_argv("", token=token), "dataset": "docs", "snapshot": "@a"}
    resumed = send(source, ssh, [rest])
    assert resumed["state"] == "done", resumed.get("stderr")
    full = state["total"] + resumed["total"]
    assert full > 8 << 20, "raw: the incompressible 8 MiB as they are on disk"
    assert resumed["total"] < full - (1 << 20), "what had arrived is not sent again"

    incremental = send(source, ssh, [step("tank/docs@b", base="tank/docs@a", intermediates=True)])
    assert incremental["state"] == "done" and incremental["total"] < full, incremental
    assert incremental.get("data", "").startswith(f"tcp {TARGET} port ") == tcp, incremental
    src, dst = side(source, "tank/docs")["tank/docs"], side(target, "backup/lab")["backup/lab/docs"]
    assert guids(dst) == guids(src) and set(guids(dst)) == {"a", "b"} and dst.resume_token == ""
    props = target.run(["zfs", "get", "-H", "-o", "value", "readonly,mounted,canmount,setuid,exec,devices", "--",
                        "backup/lab/docs"]).stdout.split()  # fmt: skip
    assert props == ["on", "no", "noauto", "off", "off", "off"], "read-only, never mounted, nothing to run"
    assert int(guest2.sh(f"cat /sys/class/net/{nic2}/statistics/rx_bytes")) - rx > 10 << 20, "over the wire"


def test_the_pair_key_may_do_nothing_but_receive_into_its_root_from_the_sender(guest, guest2, wire):
    source, target, ssh = wire
    key = f"-i {replication.pair_key(PAIR)} -o IdentitiesOnly=yes -o BatchMode=yes"
    pinned = f"-o UserKnownHostsFile={ssh['known_hosts']} -o StrictHostKeyChecking=yes"

    def with_key(command: str, extra: str = ""):
        return guest.lab_sh("ssh", f"ssh {key} {pinned} {extra} tarn-recv-{PAIR}@{TARGET} '{command}'")

    # Whatever it asks for, sshd runs tarn-recv, which reads the request as data (its rules: test_recv_helper.py).
    shell = with_key("zfs destroy -r backup")
    assert shell.returncode == 3 and "tarn-recv: refused: the request is not JSON" in shell.stdout + shell.stderr
    assert "backup/lab" in target.run(["zfs", "list", "-H", "-o", "name"]).stdout
    # From another address on the same wire the key is not accepted at all (from=).
    guest.sh(f"ip addr add 10.78.0.9/24 dev {rep_nic(guest)}")
    elsewhere = with_key('{"verb": "receive", "dataset": "x"}', extra="-b 10.78.0.9")
    assert elsewhere.returncode == 255 and "Permission denied" in elsewhere.stdout + elsewhere.stderr
    # Unpairing takes the line out and leaves the rest of the file as it was.
    as_root = with_key('{"verb": "hello"}').stdout  # the pair's key is no key of root's
    assert "tarn-recv" not in guest.lab_sh("ssh", f"ssh {key} {pinned} root@{TARGET} hello").stdout and as_root
    before = target.read_file(replication.recv_keys(PAIR))
    replication.authorize(target, PAIR, None, keys=replication.recv_keys(PAIR))
    after = target.read_file(replication.recv_keys(PAIR))
    assert "tarn-pair-1" in before and "tarn-pair-1" not in after
    assert [line for line in before.splitlines() if "tarn-pair-1" not in line] == after.splitlines()
    denied = with_key('{"verb": "receive", "dataset": "x"}')
    assert denied.returncode == 255 and "Permission denied" in denied.stdout + denied.stderr


def tarn_hosts(guest2, lab_host):
    """The second guest as Tarn's host lab2; both hosts' facts and inventory read."""
    lab2 = guest2.add_host(name="lab2")
    for host in (lab_host, lab2):
        host_refresh_facts(host=host)
        inventory_refresh(host=host)
    return lab2


def wire_pair(lab_host, lab2) -> Pair:
    """The wire's own pair as Tarn's row (made on the guests with the same verbs as pairing: the test of pairing
    proves pairing itself)."""
    return Pair.objects.create(
        pk=PAIR, source=lab_host, target=lab2, address=TARGET, root="backup/lab", status="paired", receiver_ready=True
    )


def holds(t, snapshot: str) -> str:
    return t.run(["zfs", "holds", "-H", "--", snapshot]).stdout


def test_tarn_pairs_the_hosts_runs_a_task_keeps_the_chain_held_and_stops_on_a_diverged_target(
    guest, guest2, wire, lab_host, admin_user, run_queued
):
    """Through Tarn's services, as a page would: pair (the key made on the source, allowed on the target, checked
    with tarn-recv's hello), a task's first run (full, then -I), a run with nothing new, one with a new snapshot
    (the hold moves to it on both sides; the target keeps two), a target changed by hand (the run stops and names
    the cause, nothing on the target is rolled back or pruned), then a fail-over (the replica writable and mounted,
    the task off)."""
    source, target, _ = wire
    lab2 = tarn_hosts(guest2, lab_host)
    op = run_queued(
        services.pair_start,
        source=lab_host,
        target=lab2,
        address=TARGET,
        root="backup/lab",
        user=admin_user,
        quota="1G",
    )
    assert op.status == "succeeded", op.message
    pair = Pair.objects.get()
    assert pair.status == "paired" and pair.sender_address == SOURCE and f"tarn-recv {pair.pk} backup/lab" in op.message
    assert target.run(["zfs", "get", "-H", "-p", "-o", "value", "quota", "--", "backup/lab"]).stdout.strip() == str(
        1 << 30
    )
    task = services.task_save(pair=pair, source_dataset="tank/docs", target_name="docs", keep=2, keep_hours=0)

    op = run_queued(services.task_run_start, task=task, user=admin_user)
    run = TaskRun.objects.get(operation=op)
    assert op.status == "succeeded" and run.status == "succeeded", (op.message, op.log)
    assert run.sent > 10 << 20 and run.sent >= run.expected * 0.9, (run.sent, run.expected)
    src, dst = side(source, "tank/docs")["tank/docs"], side(target, "backup/lab")["backup/lab/docs"]
    assert guids(dst) == guids(src) and set(guids(dst)) == {"a", "b"}
    tag = f"tarn-repl-{task.pk}"
    assert tag in holds(source, "tank/docs@b") and tag in holds(target, "backup/lab/docs@b")

    replication.hold(source, ["tank/docs@a", "tank/docs@b"], tag)  # one command; @b has the tag already
    assert tag in holds(source, "tank/docs@a"), "ZFS applies the rest of a batch when one snapshot refuses"
    replication.hold(source, ["tank/docs@a"], tag, release=True)
    assert tag not in holds(source, "tank/docs@a") and tag in holds(source, "tank/docs@b")

    op = run_queued(services.task_run_start, task=task, user=admin_user)
    assert TaskRun.objects.get(operation=op).outcome == "nothing", op.message

    # restore @b: a read-only clone beside the replica (it keeps @b through the pruning below), later sent back
    inventory_refresh(host=lab2)
    restore = {"task": task, "user": admin_user, "snapshot": "backup/lab/docs@b"}
    op = run_queued(services.restore_start, **restore, how="clone", name="backup/lab/docs-b")
    assert op.status == "succeeded", op.message
    props = target.run(["zfs", "get", "-H", "-o", "value", "readonly,mounted,origin", "--", "backup/lab/docs-b"])
    assert props.stdout.split() == ["on", "yes", "backup/lab/docs@b"]
    assert guest2.sh("sha256sum < /backup/lab/docs-b/two") == guest.sh("sha256sum < /tank/docs/.zfs/snapshot/b/two")

    Task.objects.filter(pk=task.pk).update(keep=1)  # @a and @b are past it after @c: @b stays for its clone
    guest.sh("head -c 1M /dev/urandom > /tank/docs/three && zfs snapshot tank/docs@c")
    op = run_queued(services.task_run_start, task=task, user=admin_user)
    assert op.status == "succeeded" and TaskRun.objects.get(operation=op).sent < 4 << 20, (op.message, op.log)
    assert "kept past 1: @b (cloned as backup/lab/docs-b)" in op.log and "pruned @a " in op.log, op.log
    assert tag in holds(target, "backup/lab/docs@c") and tag not in holds(target, "backup/lab/docs@b")
    assert tag in holds(source, "tank/docs@c") and tag not in holds(source, "tank/docs@b")
    on_target = set(guids(side(target, "backup/lab")["backup/lab/docs"]))
    assert on_target == {"b", "c"}, "the target keeps 1 and the cloned @b: @a pruned there, the source untouched"
    assert set(guids(side(source, "tank/docs")["tank/docs"])) == {"a", "b", "c"}

    # and @b sent back to the source over a pair the other way
    back_pair = {"source": lab2, "target": lab_host, "address": SOURCE, "root": "tank", "quota": "2G"}
    op = run_queued(services.pair_start, **back_pair, user=admin_user)
    assert op.status == "succeeded", op.message
    op = run_queued(services.restore_start, **restore, how="back", name="restored")
    assert op.status == "succeeded", (op.message, op.log)
    back = side(source, "tank/restored")["tank/restored"]
    assert guids(back) == {"b": guids(side(source, "tank/docs")["tank/docs"])["b"]}, "the source's own @b, back"

    guest2.sh("zfs snapshot backup/lab/docs@rogue")  # the target changed by hand
    guest.sh("zfs snapshot tank/docs@d")
    op = run_queued(services.task_run_start, task=task, user=admin_user)
    run = TaskRun.objects.get(operation=op)
    assert (op.status, run.status, run.outcome) == ("failed", "failed", "stopped"), (op.message, op.log)
    assert "changed after the last common snapshot @c" in run.message and "@rogue" in run.message
    assert set(guids(side(target, "backup/lab")["backup/lab/docs"])) == {"b", "c", "rogue"}, "nothing forced"

    op = run_queued(services.failover_start, task=task, user=admin_user, confirm="backup/lab/docs")
    assert op.status == "succeeded", op.message
    got = target.run(
        ["zfs", "get", "-H", "-o", "value", "readonly,mounted,canmount,setuid,exec", "--", "backup/lab/docs"]
    )
    props = got.stdout.split()
    assert props == ["off", "yes", "on", "on", "on"], "failed over: writable, mounted, its files may run again"
    assert not Task.objects.get(pk=task.pk).enabled, "and the task is off"


@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
def test_a_full_target_a_killed_worker_and_a_held_snapshot_lose_nothing(
    guest, guest2, wire, lab_host, admin_user, run_queued, django_capture_on_commit_callbacks
):
    """Faults, each ending with the source unchanged and the target's snapshots' guids the source's: the target's
    pool fills up mid-send (the run fails naming it; once there is room the next run resumes and completes); a held
    snapshot cannot be destroyed by hand; the worker running a transfer is SIGKILLed (tarn-send goes on as its unit on the
    NAS; the next run follows it to the end instead of starting over); the target's host key changed, and the pair's
    key refused (each run stops at once, naming which)."""
    source, target, _ = wire
    lab2 = tarn_hosts(guest2, lab_host)
    pair = wire_pair(lab_host, lab2)
    task = services.task_save(pair=pair, source_dataset="tank/docs", target_name="docs")
    before = guids(side(source, "tank/docs")["tank/docs"])

    guest2.sh("zfs set quota=5M backup/lab")  # the target fills up part-way through the 8 MiB of @a
    op = run_queued(services.task_run_start, task=task, user=admin_user)
    assert op.status == "failed" and "the target is out of space" in op.message, (op.message, op.log)
    guest2.sh("zfs set quota=none backup/lab")
    op = run_queued(services.task_run_start, task=task, user=admin_user)
    assert op.status == "succeeded", (op.message, op.log)
    assert (
        guids(side(target, "backup/lab")["backup/lab/docs"]) == before == guids(side(source, "tank/docs")["tank/docs"])
    )

    refused = guest.lab_sh("ssh", "zfs destroy tank/docs@b")
    assert refused.returncode != 0 and "it's being held" in refused.stderr, "held: not destroyed by hand"

    # 12 MiB at 512 KiB/s: killed after 2 MiB, the orphan still has ~20 s to go when the next run looks for it
    guest.sh("head -c 12M /dev/urandom > /tank/docs/big && zfs snapshot tank/docs@c")
    with django_capture_on_commit_callbacks(execute=False):
        op = services.task_run_start(task=task, user=admin_user)
    Task.objects.filter(pk=task.pk).update(limit=1 << 19)  # slow enough to be killed mid-way
    child = os.fork()  # as a worker process: Celery's prefork pool forks the same way
    if child == 0:  # the worker: it runs the operation until it is killed
        try:
            operation_execute(op.pk)
        finally:
            os._exit(0)
    try:
        deadline = time.monotonic() + 120
        while True:  # this run's send under way (the last run's progress, done, stays until it starts)
            progress = replication.send_progress(source, task.pk)
            if progress.get("state") == "running" and progress.get("total", 0) >= 2 << 20:
                break
            assert time.monotonic() < deadline, ("the transfer did not get going", progress)
            time.sleep(0.5)
    finally:
        os.kill(child, signal.SIGKILL)
        os.waitpid(child, 0)
    assert replication.send_progress(source, task.pk)["state"] == "running", "tarn-send outlives the worker"
    # as a real worker's death looks to Tarn: its operation running, its heartbeat stopped; the reaper fails it
    Operation.objects.filter(pk=op.pk).update(status="running", heartbeat_at=timezone.now() - timedelta(hours=1))
    assert operations_reap(stale_after=timedelta(minutes=5)) == 1
    killed_op = op
    Task.objects.filter(pk=task.pk).update(limit=0)
    op = run_queued(services.task_run_start, task=task, user=admin_user)
    assert op.status == "succeeded", (op.message, op.log)
    assert "following the transfer a stopped worker left running" in op.log
    src, dst = side(source, "tank/docs")["tank/docs"], side(target, "backup/lab")["backup/lab/docs"]
    assert guids(dst) == guids(src) and set(guids(src)) == {"a", "b", "c"}
    killed = TaskRun.objects.select_related("operation").get(task=task, operation=killed_op)
    assert killed.status == "failed" and "worker running this operation stopped" in killed.status_message

    # the target's host key is no longer the one pinned at pairing; then the pair's line is gone from its
    # authorized_keys: each run stops at once, naming which, and nothing moves
    guest.sh("zfs snapshot tank/docs@d")
    pinned = source.read_file(replication.known_hosts(PAIR))
    other_key = " ".join(source.read_file(f"{replication.pair_key(PAIR)}.pub").split()[:2])  # any other ed25519 key
    source.write_file(replication.known_hosts(PAIR), f"{TARGET} {other_key}\n", mode=0o600)
    op = run_queued(services.task_run_start, task=task, user=admin_user)
    assert op.status == "failed" and "host key is not the one pinned at pairing" in op.message, (op.message, op.log)
    source.write_file(replication.known_hosts(PAIR), pinned, mode=0o600)
    replication.authorize(target, PAIR, None, keys=replication.recv_keys(PAIR))
    op = run_queued(services.task_run_start, task=task, user=admin_user)
    assert op.status == "failed" and "the pair's key was refused" in op.message, (op.message, op.log)
    assert "attempt 2" not in op.log, "not tried again: another attempt would meet the same"
    assert set(guids(side(target, "backup/lab")["backup/lab/docs"])) == {"a", "b", "c"}, "nothing moved"


HOSTILE_PROPS = "sharenfs,readonly,canmount,setuid,exec,devices,mounted"
HOSTILE_WANTED = ["off", "on", "noauto", "off", "off", "off", "no"]


def hostile_key(ssh) -> tuple[str, str]:
    """The ssh options of the pair's key with the target's pinned host key, as tarn-send uses them."""
    key = f"-i {replication.pair_key(PAIR)} -o IdentitiesOnly=yes -o BatchMode=yes"
    return key, f"-o UserKnownHostsFile={ssh['known_hosts']} -o StrictHostKeyChecking=yes"


def receive_hostile(guest, guest2, ssh) -> None:
    """A taken-over sender's dataset exported to all with no_root_squash, setuid on, a setuid shell in it, sent with
    its properties (zfs send -p) through the pair's key: refused before zfs receive sees a byte. Its data sent as
    Tarn sends lands read-only, never mounted by itself, without setuid, exec or devices; the same -p stream
    received as the pair's user (as if tarn-recv's check were gone) has its sharenfs refused by ZFS itself."""
    key, pinned = hostile_key(ssh)
    request = json.dumps({"verb": "receive", "dataset": "hostile"})
    through_key = f"ssh {key} {pinned} tarn-recv-{PAIR}@{TARGET} {shlex.quote(request)}"
    guest.sh(
        "zfs create -o sharenfs='rw=@0.0.0.0/0,no_root_squash' -o setuid=on -o exec=on tank/hostile && "
        "cp /bin/sh /tank/hostile/sh && chmod 4755 /tank/hostile/sh && zfs snapshot tank/hostile@p"
    )
    refused = guest.lab_sh("ssh", f"zfs send -w -p tank/hostile@p | {through_key}")
    assert refused.returncode != 0 and "carries properties, holds or children" in refused.stderr, refused.stderr
    assert "backup/lab/hostile" not in guest2.sh("zfs list -H -o name -r backup"), "nothing received"

    taken = guest.lab_sh("ssh", f"zfs send -w tank/hostile@p | {through_key}")  # as Tarn sends: the data only
    assert taken.returncode == 0, taken.stderr
    user = f"setpriv --reuid=tarn-recv-{PAIR} --regid=tarn-recv-{PAIR} --clear-groups"
    guest2.sh(  # the same properties arrive in a -p stream straight to zfs receive, as the pair's user
        "zfs create -o sharenfs='rw=@0.0.0.0/0,no_root_squash' -o setuid=on backup/p && zfs snapshot backup/p@q"
    )
    bypass = guest2.lab_sh("ssh", f"zfs send -p backup/p@q | {user} zfs receive -s -u -- backup/lab/p")
    assert "cannot receive sharenfs property on backup/lab/p: permission denied" in bypass.stderr, bypass.stderr
    guest2.sh("zfs destroy -r backup/p && zpool sync backup")
    assert guest2.sh(f"zfs get -H -o value {HOSTILE_PROPS} backup/lab/hostile").split() == HOSTILE_WANTED
    assert guest2.sh("zfs get -H -o value sharenfs backup/lab/p").split() == ["off"]


def hostile_after_boot(guest2) -> None:
    """After the target boots again, nothing of what receive_hostile left is exported or mounted."""
    exported = guest2.sh("exportfs -v")
    assert "backup/lab" not in exported, exported
    got = guest2.sh(f"zfs get -H -o value {HOSTILE_PROPS} backup/lab/hostile").split()
    assert got == HOSTILE_WANTED, "after the boot too"
    assert guest2.sh("zfs get -H -o value sharenfs backup/lab/p").split() == ["off"]
    assert not guest2.lab_sh("ssh", "test -e /backup/lab/hostile/sh").returncode == 0, "its setuid shell nowhere"


def test_the_target_crashing_mid_send_and_rebooting_loses_nothing_and_the_next_run_resumes(
    guest, guest2, wire, lab_host, admin_user, run_queued
):
    """The target NAS is reset mid-stream (sysrq b: no sync, no clean shutdown, as a power cut or a panic). The
    run in progress fails, naming the interruption, after its attempts (the target is still booting); the pool
    comes back with the half-received stream's resume token; once the target is up the next run resumes from it
    instead of starting over. The source is unchanged and the target's snapshots carry the source's guids."""
    source, target, ssh = wire
    receive_hostile(guest, guest2, ssh)  # checked once the target is up again
    lab2 = tarn_hosts(guest2, lab_host)
    pair = wire_pair(lab_host, lab2)
    guest.sh("head -c 24M /dev/urandom > /tank/docs/big && zfs snapshot tank/docs@c")
    task = services.task_save(pair=pair, source_dataset="tank/docs", target_name="docs", limit=2 << 20)
    before = guids(side(source, "tank/docs")["tank/docs"])
    # on the target, as its own unit: once the first stream (@a) is in and the incremental's half-received state
    # shows (its token), that state synced to disk (the token can show before its txg syncs: under load a reset
    # 2 s later once lost it), two more seconds, then the reset
    guest2.sh(
        "systemd-run --unit tarn-test-crash --quiet -- sh -c 'until zfs list backup/lab/docs@a >/dev/null 2>&1 && "
        'zfs get -H -o value receive_resume_token backup/lab/docs | grep -q "^1-"; do sleep 1; done; '
        "zpool sync backup; sleep 2; "
        "echo 1 > /proc/sys/kernel/sysrq; echo b > /proc/sysrq-trigger'"
    )
    op = run_queued(services.task_run_start, task=task, user=admin_user)
    run = TaskRun.objects.get(operation=op)
    assert op.status == "failed" and run.status == "failed", (op.status, run.status, op.message, op.log)
    # its attempts find the target gone (ssh: no route, refused) or Tarn's own connection to it reset
    assert "attempt 1 failed (interrupted" in op.log, (op.message, op.log)
    assert 0 < run.sent < 30 << 20, run.sent

    # the reset came before attempt 1 failed, so the boot began before the run ended; timed from here, the boot's own
    # budget is not eaten by the run's attempts (a loaded CI machine once spent 300 s on both: the boot lost)
    guest2.wait_up(time.monotonic(), timeout=300)
    nic = rep_nic(guest2)  # the wire's address is the harness's, not the NAS's own configuration: set again
    guest2.sh(f"ip link set {nic} address {TARGET_MAC} && ip link set {nic} up && ip addr add {TARGET}/24 dev {nic}")
    token = target.run(["zfs", "get", "-H", "-o", "value", "receive_resume_token", "--", "backup/lab/docs"])
    assert len(token.stdout.strip()) > 20, "the half-received stream survived the reset"
    hostile_after_boot(guest2)

    Task.objects.filter(pk=task.pk).update(limit=0)
    op = run_queued(services.task_run_start, task=task, user=admin_user)
    run = TaskRun.objects.get(operation=op)
    assert op.status == "succeeded", (op.message, op.log)
    assert "backup/lab/docs: a transfer was cut short: it goes on from where it stopped" in op.log, op.log
    assert "discarded" not in op.log and run.sent < 30 << 20, ("resumed, not sent again whole", run.sent, op.log)
    src, dst = side(source, "tank/docs")["tank/docs"], side(target, "backup/lab")["backup/lab/docs"]
    assert guids(src) == before and guids(dst) == before, (guids(src), guids(dst))


def test_a_pull_pair_dials_from_the_target_and_its_key_may_only_send_its_root(
    guest, guest2, wire, lab_host, admin_user, run_queued
):
    """Pull: the key is made on the target, which dials the source; on the source it may only run tarn-serve, raw
    sends of the send root or below. A task's runs (full, then incremental) land as a push's do, tarn-send running
    on the target; a resume token works through the key; a send outside the root, a receive and a plain command are
    refused; unpairing takes the line out of the source."""
    source, target, _ = wire
    guest.sh("zfs create tank/other && zfs snapshot tank/other@x")
    lab2 = tarn_hosts(guest2, lab_host)
    pull = {"source": lab_host, "target": lab2, "address": SOURCE, "root": "backup/lab", "user": admin_user}
    pull["quota"] = "1G"
    op = run_queued(services.pair_start, **pull, direction="pull", send_root="tank/docs")
    assert op.status == "succeeded", (op.message, op.log)
    pair = Pair.objects.get(direction="pull")
    assert pair.sender_address == TARGET and f"tarn-serve {pair.pk} tank/docs" in op.message
    line = next(row for row in guest.sh("cat /root/.ssh/authorized_keys").splitlines() if f"tarn-pair-{pair.pk}" in row)
    assert line.startswith(f'restrict,from="{TARGET}",command="/usr/bin/python3 {HELPER_DIR}/tarn-serve {pair.pk} ')
    assert target.read_file(f"{replication.pair_key(pair.pk)}.pub").split()[1] == pair.public_key.split()[1]

    task = services.task_save(pair=pair, source_dataset="tank/docs", target_name="docs")
    op = run_queued(services.task_run_start, task=task, user=admin_user)
    assert op.status == "succeeded", (op.message, op.log)
    assert replication.send_progress(target, task.pk)["state"] == "done", "tarn-send ran on the target"
    guest.sh("head -c 1M /dev/urandom > /tank/docs/three && zfs snapshot tank/docs@c")
    op = run_queued(services.task_run_start, task=task, user=admin_user)
    run = TaskRun.objects.get(operation=op)
    assert op.status == "succeeded" and 0 < run.sent < 3 << 20, (op.message, op.log)
    src, dst = side(source, "tank/docs")["tank/docs"], side(target, "backup/lab")["backup/lab/docs"]
    assert guids(dst) == guids(src) and set(guids(src)) == {"a", "b", "c"}
    tag = f"tarn-repl-{task.pk}"
    assert tag in holds(source, "tank/docs@c") and tag in holds(target, "backup/lab/docs@c")

    ssh = {
        "address": SOURCE,
        "port": 22,
        "identity": replication.pair_key(pair.pk),
        "known_hosts": replication.known_hosts(pair.pk),
        "cipher": replication.CIPHER,
    }

    def through_key(request) -> str:
        """The target's ssh with the pair's key, as tarn-send runs it: a request, or (a str) any command at all."""
        argv = send_helper.ssh_argv(ssh, {})
        return shlex.join([*argv[:-1], request if isinstance(request, str) else json.dumps(request)])

    # a stream cut short by hand on the target, then finished from its token, through the key
    half = through_key({"verb": "send", "argv": replication.send_argv("tank/docs@a")})
    guest2.lab_sh("ssh", f"{half} | head -c 3000000 | zfs receive -s -u backup/lab/partial")
    token = guest2.sh("zfs get -H -o value receive_resume_token backup/lab/partial").strip()
    rest = through_key({"verb": "send", "argv": replication.send_argv("", token=token)})
    guest2.sh(f"{rest} | zfs receive -s -u backup/lab/partial")
    assert guids(side(target, "backup/lab")["backup/lab/partial"]) == {"a": guids(src)["a"]}

    for request, says in [
        ({"verb": "send", "argv": replication.send_argv("tank/other@x")}, "tank/other is not tank/docs or below"),
        ({"verb": "receive", "dataset": "", "first": True}, "this key may only send"),
        ("zfs destroy -r tank", "not JSON"),
    ]:
        refused = guest2.lab_sh("ssh", through_key(request))
        assert refused.returncode != 0 and says in refused.stderr, (request, refused.stderr)
    assert "tank/docs@c" in guest.sh("zfs list -H -t snapshot -o name tank/docs"), "nothing changed on the source"

    op = run_queued(services.task_delete_start, task=task, user=admin_user, confirm="backup/lab/docs")
    op = run_queued(services.unpair_start, pair=pair, user=admin_user)
    assert op.status == "succeeded", op.message
    assert f"tarn-pair-{pair.pk}" not in guest.sh("cat /root/.ssh/authorized_keys"), "the source no longer accepts it"


def test_a_paired_nas_decides_only_the_data_never_what_the_replica_becomes_nor_where_it_lands(guest, guest2, wire):
    """A paired NAS that was taken over, both ways round (the issue's two high findings):
    - the sender (first guest) makes a dataset exported to all with no_root_squash, setuid on, a setuid shell in
      it, and sends it with its properties (zfs send -p) through the pair's key: tarn-recv refuses the stream
      before zfs receive sees a byte. Its data sent as Tarn sends lands read-only, never mounted by itself, without
      setuid, exec or devices; the same -p stream received as the pair's user (as if tarn-recv's check were gone)
      has its sharenfs refused by ZFS itself. After the target boots nothing of it is exported or mounted (proven
      by the crash test, whose target boots again anyway: one boot, not two).
    - the other way (a pair from the second guest into the first's tank/restores), the backup NAS knows production's
      guids: it grows a child under its replica and sends a replication package (-R -I) that libzfs would relocate
      into production's tank/docs by guid. Through the key: refused. As the pair's user with -e: ZFS refuses the
      write outside the root. Only root could do it (shown last, so this test can tell the difference)."""
    source, target, ssh = wire
    receive_hostile(guest, guest2, ssh)  # what a boot makes of it: the crash test, which boots the target anyway
    key, pinned = hostile_key(ssh)

    # --- the other way: the backup NAS (second guest) sends a package that would land in production -----------------
    guest.sh("zfs create tank/restores")
    docs = json.dumps({"verb": "receive", "dataset": "docs"})  # the backup NAS holds production's replica first
    replica = guest.lab_sh("ssh", f"zfs send -w tank/docs@b | ssh {key} {pinned} tarn-recv-{PAIR}@{TARGET} '{docs}'")
    assert replica.returncode == 0, replica.stderr
    back = PAIR + 1
    replication.install_helpers(target)
    public = replication.pair_make_key(target, back)
    replication.pair_pin(target, back, SOURCE, 22, [guest.env["LAB_HOST_KEY"]])
    replication.receiver_prepare(source, back, "tank/restores")
    line = replication.authorized_line(back, "tank/restores", TARGET, public)
    replication.authorize(source, back, line, keys=replication.recv_keys(back))
    guest2.sh(  # the replica of tank/docs@a,@b grows a child; both get @x: -R -I from @b carries the child
        "zfs set readonly=off backup/lab/docs && zfs create -o mountpoint=none backup/lab/docs/evil && "
        "zfs snapshot -r backup/lab/docs@x"
    )
    package = "zfs send -R -I @b backup/lab/docs@x"
    back_key = f"-i {replication.pair_key(back)} -o IdentitiesOnly=yes -o BatchMode=yes"
    back_pinned = f"-o UserKnownHostsFile={replication.known_hosts(back)} -o StrictHostKeyChecking=yes"
    sent = guest2.lab_sh("ssh", f"{package} | ssh {back_key} {back_pinned} tarn-recv-{back}@{SOURCE} '{docs}'")
    assert sent.returncode != 0 and "carries properties, holds or children" in sent.stderr, sent.stderr
    before = guest.sh("zfs list -H -t all -o name -r tank/docs")
    data = guest2.lab_sh("ssh", f"{package} | base64 -w0").stdout  # carried through this machine
    guest.sh(f"echo {data} | base64 -d > /root/package")
    as_user = f"setpriv --reuid=tarn-recv-{back} --regid=tarn-recv-{back} --clear-groups"
    relocated = guest.lab_sh("ssh", f"{as_user} zfs receive -s -u -e tank/restores < /root/package")
    assert relocated.returncode != 0 and "permission denied" in relocated.stderr, relocated.stderr
    assert guest.sh("zfs list -H -t all -o name -r tank/docs") == before, "production untouched"
    as_root = guest.lab_sh("ssh", "zfs receive -s -u -e tank/restores < /root/package")
    assert "tank/docs@x" in guest.sh("zfs list -H -t all -o name -r tank/docs"), (
        "as root, libzfs puts the package into production by guid: what the pair's user is kept from",
        as_root.stderr,
    )
