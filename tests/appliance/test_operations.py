"""Operations: one active per target, failures shown with their message, the reaper."""

import base64
from datetime import timedelta

import pytest
from django.utils import timezone

from appliance.models import Host, Operation, OperationSecret
from appliance.operations import (
    OPERATION_TASK,
    TargetBusy,
    app,
    operation_execute,
    operation_reaped,
    operation_runner,
    operation_start,
    operation_tracking,
    operations_reap,
)
from appliance.selectors import _operation_rows, operation_refused, operations_of
from hostlib.errors import Busy

seen = []


@operation_runner("test.record")
def record(tracker):
    seen.append((tracker.op.pk, tracker.op.params, tracker.secret))
    tracker.progress(50, "recorded")


@pytest.fixture
def queued(monkeypatch):
    """What operation_start hands the broker (the worker round trip is in the integration tier)."""
    sent = []
    monkeypatch.setattr(
        app, "send_task", lambda name, args, kwargs, queue, retry: sent.append((name, args, queue, kwargs))
    )
    return sent


def test_an_operation_is_saved_then_queued_on_commit_to_its_hosts_queue(
    local_host, admin_user, queued, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        op = operation_start(kind="test.x", subject="tank", host=local_host, user=admin_user)
    assert Operation.objects.get(pk=op.pk).status == "queued" and queued == []
    callbacks[0]()
    assert queued == [(OPERATION_TASK, [op.pk], "host.local", {})]


def test_a_secret_is_split_between_the_message_and_a_pad_and_joined_once(
    local_host, admin_user, queued, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        op = operation_start(
            kind="test.record", subject="t", host=local_host, user=admin_user, params={"u": "a"}, secret="s3cret-pw"
        )
    [(_, args, _, kwargs)] = queued
    pad = bytes(OperationSecret.objects.get(operation=op).pad)
    row = Operation.objects.get(pk=op.pk)
    at_rest = repr((kwargs, row.params, row.message, row.log, pad))
    assert "s3cret-pw" not in at_rest and base64.b64encode(b"s3cret-pw").decode() not in at_rest
    operation_execute(*args, **kwargs)
    assert seen[-1] == (op.pk, {"u": "a"}, "s3cret-pw")
    assert not OperationSecret.objects.exists()  # used once, then gone
    operation_execute(*args, **kwargs)  # a redelivered message finds neither the pad nor a queued operation
    assert len([s for s in seen if s[0] == op.pk]) == 1


def test_the_runner_registered_for_the_kind_runs_it(local_host, admin_user):
    op = Operation.objects.create(kind="test.record", target="t", host=local_host, params={"u": "a"})
    operation_execute(op.pk)
    op.refresh_from_db()
    assert seen[-1] == (op.pk, {"u": "a"}, None) and (op.status, op.progress) == ("succeeded", 100)


def test_a_named_runner_serves_many_kinds(local_host):
    op = Operation.objects.create(kind="pool.frobnicate", runner="test.record", target="t", host=local_host)
    operation_execute(op.pk)
    op.refresh_from_db()
    assert seen[-1][0] == op.pk and op.status == "succeeded"


def test_an_operation_without_a_runner_fails_saying_so(local_host):
    op = Operation.objects.create(kind="no.such.kind", target="t", host=local_host)
    operation_execute(op.pk)
    op.refresh_from_db()
    assert op.status == "failed" and "No runner is registered for operations of kind no.such.kind" in op.message


def test_two_runners_for_one_kind_are_refused_at_import():
    with pytest.raises(ValueError, match="two runners"):
        operation_runner("test.record")(lambda tracker: None)


def test_only_one_active_operation_per_target(local_host, admin_user, queued):
    assert (
        operation_start(kind="test.x", subject="tank", host=local_host, user=admin_user).target
        == "host:local:test:tank"
    )
    with pytest.raises(TargetBusy):
        operation_start(kind="test.y", subject="tank", host=local_host, user=admin_user)
    operation_start(kind="test.y", subject="other", host=local_host, user=admin_user)  # another subject is free
    Operation.objects.update(status="succeeded")
    operation_start(kind="test.y", subject="tank", host=local_host, user=admin_user)


def test_the_lock_and_queue_come_from_the_kinds_declaration(
    local_host, admin_user, queued, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        op = operation_start(kind="test.bench", host=local_host, user=admin_user)
    assert op.target == "host:local:bench-test" and queued[-1][2] == "bench.local"
    with pytest.raises(ValueError, match="no runner is declared for operations of kind no.such.kind"):
        operation_start(kind="no.such.kind", host=local_host, user=admin_user)
    assert not Operation.objects.filter(kind="no.such.kind").exists()


def test_a_failing_body_ends_failed_with_the_hosts_message_shown(local_host, admin_client):
    op = Operation.objects.create(kind="x", target="t", host=local_host)
    with operation_tracking(op.pk) as tracker:
        tracker.progress(40, "working")
        raise Busy(["zpool", "export", "tank"], 1, "cannot export 'tank': pool is busy\n")
    op.refresh_from_db()
    assert op.status == "failed" and op.message == "zpool: cannot export 'tank': pool is busy"
    assert op.progress == 40 and op.finished_at is not None
    page = admin_client.get(f"/operations/{op.pk}/")
    assert b"pool is busy" in page.content


def test_an_unexpected_exception_fails_without_leaking_a_traceback(local_host):
    op = Operation.objects.create(kind="x", target="t", host=local_host)
    with operation_tracking(op.pk):
        raise KeyError("secret-internal-detail")
    op.refresh_from_db()
    assert op.status == "failed"
    assert "KeyError" in op.message and "secret-internal-detail" not in op.message


def test_success_ends_at_100_percent(local_host):
    op = Operation.objects.create(kind="x", target="t", host=local_host)
    with operation_tracking(op.pk) as tracker:
        tracker.progress(50, "half")
    op.refresh_from_db()
    assert (op.status, op.progress) == ("succeeded", 100)


def test_an_operation_that_is_not_queued_is_not_run_again(local_host):
    op = Operation.objects.create(kind="x", target="t", host=local_host, status="failed")
    with operation_tracking(op.pk) as tracker:
        assert tracker is None


def test_the_reaper_fails_running_operations_whose_worker_went_silent(local_host):
    stale = Operation.objects.create(
        kind="x", target="a", host=local_host, status="running", heartbeat_at=timezone.now() - timedelta(minutes=5)
    )
    fresh = Operation.objects.create(
        kind="x", target="b", host=local_host, status="running", heartbeat_at=timezone.now()
    )
    assert operations_reap(stale_after=timedelta(seconds=90)) == 1
    stale.refresh_from_db()
    fresh.refresh_from_db()
    assert stale.status == "failed" and "stopped responding" in stale.message
    assert fresh.status == "running"


cleaned = []


@operation_reaped("test.reaped")
def reaped(op):
    cleaned.append(op.pk)
    if op.target == "broken":
        raise RuntimeError("the clean-up failed")


def test_the_reaper_hands_each_operation_it_failed_to_its_kinds_clean_up_once(local_host):
    cleaned.clear()
    old = timezone.now() - timedelta(minutes=5)
    broken, other, fresh = (
        Operation.objects.create(kind="test.reaped", target=t, host=local_host, status="running", heartbeat_at=at)
        for t, at in (("broken", old), ("other", old), ("fresh", timezone.now()))
    )
    assert operations_reap(stale_after=timedelta(seconds=90)) == 2, "a clean-up that fails stops no other"
    assert sorted(cleaned) == [broken.pk, other.pk] and Operation.objects.get(pk=other.pk).status == "failed"
    assert operations_reap(stale_after=timedelta(seconds=90)) == 0 and len(cleaned) == 2


def test_the_status_fragment_polls_only_while_running(local_host, viewer_client):
    op = Operation.objects.create(kind="x", target="t", host=local_host, status="running", progress=30)
    running = viewer_client.get(f"/operations/{op.pk}/", headers={"HX-Request": "true"})
    assert running.status_code == 200 and b"hx-trigger" in running.content and b"<html" not in running.content
    Operation.objects.filter(pk=op.pk).update(status="succeeded")
    done = viewer_client.get(f"/operations/{op.pk}/", headers={"HX-Request": "true"})
    assert done.status_code == 286 and b"hx-trigger" not in done.content


@pytest.mark.django_db
def test_a_forms_last_refused_attempt_is_found_by_index_not_by_a_scan_of_every_operation(local_host):
    Operation.objects.bulk_create(
        [Operation(kind="pools.snapshot_task", target=f"t{i}", host=local_host, status="succeeded") for i in range(50)]
    )
    refused = Operation.objects.create(kind="encryption.unlock", target="tank", host=local_host, status="failed",
                                       finished_at=timezone.now())  # fmt: skip
    assert operation_refused(kinds=["encryption.unlock"], host=local_host) == refused
    plan = _operation_rows().filter(kind__in=["encryption.unlock"], host=local_host)[:1].explain()
    assert "appliance_op_host_kind_id" in plan, plan
    assert "appliance_op_kind_id" in _operation_rows().filter(kind__in=["encryption.unlock"])[:1].explain()


@pytest.mark.django_db
def test_an_apps_operations_are_its_kinds_alone_newest_first_read_by_index(local_host):
    other = Host.objects.create(name="other", address="192.0.2.9")
    made = [Operation.objects.create(kind=kind, target=f"t{i}", host=host, status="succeeded")
            for i, (kind, host) in enumerate([("directory.join", local_host), ("directory.leave", other),
                                              ("directoryx.fake", local_host), ("directory.refresh", local_host),
                                              ("pools.refresh", local_host)])]  # fmt: skip
    assert list(operations_of("directory", host=local_host)) == [made[3], made[0]]
    assert list(operations_of("directory")) == [made[3], made[1], made[0]]
    assert "appliance_op_host_kind_id" in operations_of("directory", host=local_host)[:5].explain()
    assert "appliance_op_kind_id" in operations_of("directory")[:5].explain()
