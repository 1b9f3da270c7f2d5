"""A task's run on a fake host (both NAS answered with output in the formats captured from the lab guests; nothing
runs): what it says when there is nothing to send, a resume token the target wrote that resolves elsewhere, a
burst of new snapshots that holds pruning, the hours no snapshot younger than is pruned, and a dataset made outside
the pair's root while it received. The transfers themselves are the lab's (tests/lab/test_replication.py)."""

import json
import time
from pathlib import Path

import pytest
from django.utils import timezone

from analytics.selectors import conditions
from appliance.models import Host
from hostlib import replication
from hostlib.runner import PYTHON
from pools.models import Dataset, Pool
from replication import services
from replication.models import DatasetState, Pair, Task, TaskRun
from tests.support.runners import FakeHost

CAPTURED = Path(__file__).resolve().parents[1] / "fixtures" / "host" / "replication"
SOURCE, TARGET = "tank/docs", "backup/lab/docs"
NOW = int(time.time())  # the snapshots' creation below counts back from it
TXGS = (CAPTURED / "kstat-txgs.txt").read_text()


def listing(dataset: str, snaps: list[tuple[str, int, int, int]], *, guid: int = 77, token: str = "-") -> str:
    """`zfs list -H -p -o name,type,guid,createtxg,receive_resume_token,creation -s createtxg` of one dataset:
    snaps are (name, guid, createtxg, creation), oldest first (the format of listing.txt, captured)."""
    rows = [f"{dataset}\tfilesystem\t{guid}\t5\t{token}\t{NOW - 10**6}"]
    rows += [f"{dataset}@{name}\tsnapshot\t{g}\t{txg}\t-\t{created}" for name, g, txg, created in snaps]
    return "\n".join(rows) + "\n"


def snaps(*names: str, hours_old: float = 48) -> list[tuple[str, int, int, int]]:
    """Snapshots with guids 1000+i, createtxg 100+i, made hours_old ago (each a minute after the one before)."""
    return [(n, 1000 + i, 100 + i, NOW - int(hours_old * 3600) + 60 * i) for i, n in enumerate(names)]


@pytest.fixture
def pair(db):
    now = timezone.now()
    hosts = []
    for name, pool, datasets in (("nas1", "tank", ["tank", SOURCE]), ("nas2", "backup", ["backup", "backup/lab"])):
        host = Host.objects.create(name=name, address=f"{name}.example", facts={"zfs_version": "zfs-2.3.2"})
        row = Pool.objects.create(host=host, name=pool, guid=name, state="ONLINE", observed_at=now)
        for dataset in datasets:
            Dataset.objects.create(host=host, pool=row, name=dataset, type="filesystem", observed_at=now)
        hosts.append(host)
    return Pair.objects.create(
        source=hosts[0], target=hosts[1], address="10.78.0.2", root="backup/lab", status="paired", receiver_ready=True,
        public_key="ssh-ed25519 AAAA tarn-pair-1", sender_address="10.78.0.1",
    )  # fmt: skip


@pytest.fixture
def fake(monkeypatch):
    fake = FakeHost()
    fake.answer("cat", "--", f"{replication.HELPER_DIR}/tarn-send", stdout="")  # helpers: written once
    fake.answer("cat", "--", "/proc/spl/kstat/zfs/backup/txgs", stdout=TXGS)
    fake.answer("zfs", "list", "-H", "-p", "-o", "name,type,createtxg", stdout="")  # nothing made during the run
    fake.answer("systemctl", "show", stdout="ActiveState=inactive\nResult=success\n")
    fake.answer("zfs", "get", "-H", "-p", "-o", "name,value", "clones", stdout="")  # nothing cloned
    return fake.install(monkeypatch)


def sides(fake: FakeHost, source: str, target: str | None, *, after: str | None = None) -> None:
    """The two listings a run reads; after: the target's once tarn-send has run (its progress says done)."""
    fake.answer(*replication.listing_argv(SOURCE, recursive=False), stdout=source)
    there = replication.listing_argv(TARGET, recursive=False)
    if target is None:
        fake.answer(*there, returncode=1, stderr=f"cannot open '{TARGET}': dataset does not exist\n")
    else:
        fake.answer(*there, stdout=target)
    if after is not None:
        fake.on("systemd-run", call=lambda argv: fake.answer(*there, stdout=after))
    done = {"state": "done", "step": 1, "steps": 1, "total": 4096, "started": NOW, "updated": NOW + 1}
    fake.answer(*PYTHON, f"{replication.HELPER_DIR}/tarn-send", "--wait", stdout=json.dumps(done))


def run(task, run_queued, admin_user) -> tuple:
    op = run_queued(services.task_run_start, task=task, user=admin_user)
    return op, TaskRun.objects.get(operation=op)


def test_a_run_with_no_snapshot_to_send_says_the_data_is_not_protected_and_alerts_after_three(
    pair, fake, run_queued, admin_user
):
    sides(fake, listing(SOURCE, []), None)
    task = Task.objects.create(pair=pair, source_dataset=SOURCE, target_name="docs")
    for _ in range(3):
        op, done = run(task, run_queued, admin_user)
        assert (done.status, done.outcome) == ("succeeded", "empty"), (done.status, op.message)
    assert "has none at all" in done.message and "not protected" in done.message
    assert not any(a[0] == "systemd-run" for a in fake.argvs), "nothing to send, nothing started"
    found = {(c.rule, c.subject): c.message for c in conditions(pair.source)}
    assert "has sent nothing" in found[("replication_empty", f"task {task.pk}")]


@pytest.mark.parametrize("elsewhere", ["tank/secret@a", "tank/docs/child@a"])
def test_a_resume_token_the_target_wrote_that_resolves_to_another_dataset_stops_the_run(
    pair, fake, run_queued, admin_user, elsewhere
):
    """A target taken over writes a token whose toguid is another dataset's snapshot on the source (even one below
    the task's own): the source's own dry run says what it resolves to, and the run stops before a byte is sent."""
    token = "1-abc-de-f0"
    sides(fake, listing(SOURCE, snaps("a", "b")), listing(TARGET, [], token=token))
    dry = (CAPTURED / "send-t-dry-full-raw.txt").read_text().replace("t/docs@a", elsewhere)
    fake.answer("zfs", "send", "-n", "-v", "-P", "-w", "-t", token, stdout=dry)
    fake.answer("setpriv", stdout="")  # receive_busy: no receive holds the lock
    task = Task.objects.create(pair=pair, source_dataset=SOURCE, target_name="docs")
    op, done = run(task, run_queued, admin_user)
    assert op.status == "failed" and done.status == "failed", op.message
    assert "resume token was refused" in op.message and elsewhere.split("@")[0] in op.message, op.message
    assert not any(a[0] == "systemd-run" for a in fake.argvs), "nothing sent"
    fair = (CAPTURED / "send-t-dry-full-raw.txt").read_text().replace("t/docs@a", "tank/docs@a")
    fake.answer("zfs", "send", "-n", "-v", "-P", "-w", "-t", token, stdout=fair)
    op, done = run(task, run_queued, admin_user)
    assert any(a[0] == "systemd-run" for a in fake.argvs), "its own dataset's token: resumed"


def test_a_burst_of_new_snapshots_holds_pruning_until_an_admin_resumes_it(pair, fake, run_queued, admin_user):
    """Keep 4, prune at most 2 a run: a run that brings 6 new snapshots to a replica with history prunes nothing and
    says why (an alert), until an admin resumes pruning; then at most 2 go per run, oldest first."""
    task = Task.objects.create(pair=pair, source_dataset=SOURCE, target_name="docs", keep=4, keep_hours=0,
                               prune_limit=2)  # fmt: skip
    old = snaps("s1", "s2", "s3", "s4")
    DatasetState.objects.create(task=task, source=SOURCE, target=TARGET, snapshot="s4", guid="1003")
    burst = snaps("s1", "s2", "s3", "s4", "n1", "n2", "n3", "n4", "n5", "n6")
    sides(fake, listing(SOURCE, burst), listing(TARGET, old), after=listing(TARGET, burst))
    op, done = run(task, run_queued, admin_user)
    assert op.status == "succeeded" and done.status == "succeeded", (op.message, op.log)
    task.refresh_from_db()
    assert "brought 6 new snapshots to backup/lab/docs, more than 2" in task.prune_held
    assert not [a for a in fake.argvs if a[:2] == ["zfs", "destroy"]], "nothing pruned"
    found = {(c.rule, c.subject) for c in conditions(pair.source)}
    assert ("replication_pruning_held", f"task {task.pk}") in found

    services.task_pruning_resume(task=task)
    fake.reset()
    more = snaps("s1", "s2", "s3", "s4", "n1", "n2", "n3", "n4", "n5", "n6", "n7")  # the next run brings one
    sides(fake, listing(SOURCE, more), listing(TARGET, burst), after=listing(TARGET, more))
    op, done = run(task, run_queued, admin_user)
    assert [a for a in fake.argvs if a[:2] == ["zfs", "destroy"]] == [["zfs", "destroy", "--", f"{TARGET}@s1,s2"]]
    assert not {(c.rule, c.subject) for c in conditions(pair.source)} & {
        ("replication_pruning_held", f"task {task.pk}")
    }


def test_nothing_younger_than_keep_hours_is_pruned_whatever_keep_says(pair, fake, run_queued, admin_user):
    task = Task.objects.create(pair=pair, source_dataset=SOURCE, target_name="docs", keep=1, keep_hours=24,
                               prune_limit=10)  # fmt: skip
    history = snaps("d1", "d2", hours_old=72) + [(n, 2000 + i, 200 + i, NOW - 3600 * (5 - i)) for i, n in
                                                 enumerate(["h1", "h2", "h3"])]  # fmt: skip
    DatasetState.objects.create(task=task, source=SOURCE, target=TARGET, snapshot="h2", guid="2001")
    sides(fake, listing(SOURCE, history), listing(TARGET, history[:-1]), after=listing(TARGET, history))
    op, _ = run(task, run_queued, admin_user)
    assert op.status == "succeeded", (op.message, op.log)
    assert [a for a in fake.argvs if a[:2] == ["zfs", "destroy"]] == [["zfs", "destroy", "--", f"{TARGET}@d1,d2"]]


def test_a_snapshot_a_restore_was_cloned_from_is_kept_and_the_rest_are_pruned(pair, fake, run_queued, admin_user):
    """ZFS destroys none of a batch while one snapshot in it has a clone (captured): the prune leaves the cloned one
    out, takes the next one in its place (the limit counts what goes), says so, and the run succeeds."""
    task = Task.objects.create(pair=pair, source_dataset=SOURCE, target_name="docs", keep=1, keep_hours=0,
                               prune_limit=2)  # fmt: skip
    history = snaps("a", "b", "c", "d")
    DatasetState.objects.create(task=task, source=SOURCE, target=TARGET, snapshot="c", guid="1002")
    sides(fake, listing(SOURCE, history), listing(TARGET, history[:-1]), after=listing(TARGET, history))
    captured = (CAPTURED / "get-clones.txt").read_text()
    fake.answer(*replication.clones_argv(TARGET, ["a", "b", "c"]), stdout=captured)
    op, done = run(task, run_queued, admin_user)
    assert op.status == "succeeded" and done.status == "succeeded", (op.message, op.log)
    assert [a for a in fake.argvs if a[:2] == ["zfs", "destroy"]] == [["zfs", "destroy", "--", f"{TARGET}@a,c"]]
    assert "kept past 1: @b (cloned as backup/lab/docs-b)" in op.log, op.log


def test_a_dataset_made_outside_the_pairs_root_during_a_run_is_named_and_alerted(pair, fake, run_queued, admin_user):
    """The receiving pool is listed for what it gained during the run (createtxg past the txg read at the start):
    one outside every paired root there is named on the pair and raises a critical alert on the target."""
    start = max(int(line.split()[0]) for line in TXGS.splitlines() if line[:1].isdigit())
    made = f"backup/lab/docs\tfilesystem\t{start + 3}\nbackup/evil\tfilesystem\t{start + 4}\ntank2\tfilesystem\t3\n"
    fake.answer("zfs", "list", "-H", "-p", "-o", "name,type,createtxg", stdout=made)
    sides(fake, listing(SOURCE, snaps("a")), None, after=listing(TARGET, snaps("a")))
    task = Task.objects.create(pair=pair, source_dataset=SOURCE, target_name="docs")
    op, _ = run(task, run_queued, admin_user)
    pair.refresh_from_db()
    assert "outside backup/lab" in pair.intrusion and "backup/evil" in pair.intrusion, (pair.intrusion, op.log)
    assert "backup/lab/docs" not in pair.intrusion.split(": ")[-1]
    found = {(c.rule, c.subject): c.message for c in conditions(pair.target)}
    assert "backup/evil" in found[("replication_outside_root", f"pair {pair.pk}")]
    services.pair_intrusion_clear(pair=pair)
    assert not [c for c in conditions(pair.target) if c.rule == "replication_outside_root"]


def test_a_stale_resume_token_is_aborted_on_the_target_and_the_run_plans_again(pair, fake, run_queued, admin_user):
    """The snapshot a cut first transfer was of is gone from the source: its token is of no use (the sender says so,
    fail_stale_token.txt, captured); the partial receive is aborted on the target and the run plans again: a full
    send of what the source has now."""
    token = "1-abc-de-f0"
    sides(fake, listing(SOURCE, snaps("b")), listing(TARGET, [], token=token), after=listing(TARGET, snaps("b")))
    stale = (CAPTURED / "fail_stale_token.txt").read_text()
    fake.answer("zfs", "send", "-n", "-v", "-P", "-w", "-t", token, returncode=255, stderr=stale)
    fake.answer("setpriv", stdout="")  # receive_busy: no receive holds the lock
    gone = f"cannot open '{TARGET}': dataset does not exist\n"
    there = replication.listing_argv(TARGET, recursive=False)
    fake.on("zfs", "receive", "-A", call=lambda argv: fake.answer(*there, returncode=1, stderr=gone))
    task = Task.objects.create(pair=pair, source_dataset=SOURCE, target_name="docs")
    op, done = run(task, run_queued, admin_user)
    assert op.status == "succeeded" and done.status == "succeeded", (op.message, op.log)
    asked = [a for a in fake.argvs if a[:2] in (["zfs", "send"], ["zfs", "receive"]) or a[0] == "systemd-run"]
    assert asked[:2] == [
        ["zfs", "send", "-n", "-v", "-P", "-w", "-t", token],
        ["zfs", "receive", "-A", "--", TARGET],  # discarded before anything else is planned
    ], asked
    assert asked[2][:2] == ["zfs", "send"] and "-t" not in asked[2] and asked[2][-1] == f"{SOURCE}@b", asked
    assert asked[-1][0] == "systemd-run" and f"the token of {TARGET} is of no use" in op.log


def test_a_run_ends_after_its_tarn_send_has_exited_so_the_next_does_not_follow_it_again(
    pair, fake, run_queued, admin_user
):
    """tarn-send writes "done" and then exits: its unit is still active for a moment after its last word. A run
    returns only once the unit has gone, so the next run does not take it for one a dead worker left running (that
    run once "followed" it, counted the first stream again and said "Sent 10 MiB" where nothing was new)."""
    history = snaps("a", "b")
    sides(fake, listing(SOURCE, history), None, after=listing(TARGET, history))
    inactive, active = "ActiveState=inactive\nResult=success\n", "ActiveState=active\nResult=\n"
    exiting = {"looks": 0}

    def last_word(argv):  # the progress says done: the unit stays active for the next two looks
        exiting["looks"] = 2
        fake.answer("systemctl", "show", stdout=active)

    def look(argv):
        exiting["looks"] -= 1
        if exiting["looks"] < 0:
            fake.answer("systemctl", "show", stdout=inactive)

    fake.on(*PYTHON, f"{replication.HELPER_DIR}/tarn-send", "--wait", call=last_word)
    fake.on("systemctl", "show", call=look)
    task = Task.objects.create(pair=pair, source_dataset=SOURCE, target_name="docs")
    op, first = run(task, run_queued, admin_user)
    assert (op.status, first.outcome, first.sent) == ("succeeded", "", 4096), (op.message, op.log)
    op, second = run(task, run_queued, admin_user)
    assert (op.status, second.outcome, second.sent) == ("succeeded", "nothing", 0), (op.message, op.log)
    assert "following the transfer" not in op.log and [a[0] for a in fake.argvs].count("systemd-run") == 1
