"""Operations through a real Redis and a real Celery worker process (not eager mode)."""

import signal
import time
from datetime import timedelta

import pytest
import redis
from django.conf import settings

from appliance.models import Host, HostTurn, Operation
from appliance.operations import operation_start, operations_reap
from appliance.services import host_probe_start
from tests.conftest import require
from tests.support import runners  # noqa: F401 - registers test.fail and test.slow here too
from tests.support.worker import start_worker, stop_worker

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def worker(tmp_path):
    try:
        redis.Redis.from_url(settings.CELERY_BROKER_URL).ping()
        reachable = True
    except redis.RedisError:
        reachable = False
    require(reachable, f"Redis is not reachable at {settings.CELERY_BROKER_URL}")
    redis.Redis.from_url(settings.CELERY_BROKER_URL).delete("default", "host.local", "bench.local")
    process = start_worker("default,host.local", tmp_path / "worker.log")
    yield process
    stop_worker(process)


def wait_for(predicate, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = predicate()
        if result:
            return result
        time.sleep(0.2)
    raise AssertionError("condition not met in time")


def test_a_host_probe_round_trips_through_the_worker(worker, local_host, admin_user):
    op = host_probe_start(host=local_host, user=admin_user)
    done = wait_for(lambda: Operation.objects.filter(pk=op.pk, status__in=["succeeded", "failed"]).first())
    assert done.status == "succeeded", done.message
    local_host.refresh_from_db()
    assert local_host.facts["cpus"] >= 1 and local_host.observed_at is not None


def test_a_task_that_raises_ends_failed_with_its_message_on_the_page(worker, local_host, admin_user, admin_client):
    op = operation_start(kind="test.fail", subject="fail", host=local_host, user=admin_user)
    done = wait_for(lambda: Operation.objects.filter(pk=op.pk, status="failed").first())
    assert done.message == "zpool: cannot export 'tank': pool is busy"
    assert "pool is busy" in admin_client.get(f"/operations/{op.pk}/").content.decode()


def test_a_killed_workers_operation_is_reaped(worker, local_host, admin_user):
    op = operation_start(kind="test.slow", subject="slow", host=local_host, user=admin_user)
    wait_for(lambda: Operation.objects.filter(pk=op.pk, status="running").exists())
    stop_worker(worker, signal.SIGKILL)  # the whole worker, pool child included
    time.sleep(3)
    assert operations_reap(stale_after=timedelta(seconds=2)) == 1
    op.refresh_from_db()
    assert op.status == "failed" and "stopped responding" in op.message


def test_one_hosts_long_change_delays_no_other_host_and_a_hosts_changes_stay_one_at_a_time(tmp_path, local_host):
    """A worker serving two hosts' queues with three processes (as `make run`'s hosts worker): host B's change starts
    at once while the local host's runs; the local host's next change waits its turn (HostTurn), then runs."""
    require(bool(redis.Redis.from_url(settings.CELERY_BROKER_URL).ping()), "Redis is not reachable")
    other = Host.objects.create(name="nasb", address="192.0.2.2")
    redis.Redis.from_url(settings.CELERY_BROKER_URL).delete("default", "host.local", "host.nasb")
    process = start_worker("default,host.local,host.nasb", tmp_path / "worker.log", concurrency=3)
    try:
        long = operation_start(kind="test.pause", subject="long", host=local_host, user=None, params={"seconds": 8})
        wait_for(lambda: Operation.objects.filter(pk=long.pk, status="running").exists())
        assert HostTurn.objects.get(host=local_host).operation_id == long.pk
        beside = operation_start(kind="test.pause", subject="b", host=other, user=None, params={"seconds": 0})
        after = operation_start(kind="test.pause", subject="c", host=local_host, user=None, params={"seconds": 0})
        done = wait_for(lambda: Operation.objects.filter(pk=beside.pk, status="succeeded").first())
        waited = (done.started_at - done.created_at).total_seconds()
        assert waited < 3, f"host B waited {waited:.1f} s behind the local host's change"
        assert Operation.objects.get(pk=long.pk).status == "running"
        assert Operation.objects.get(pk=after.pk).status == "queued"  # its host's turn is taken
        second = wait_for(lambda: Operation.objects.filter(pk=after.pk, status="succeeded").first(), timeout=60)
        first = Operation.objects.get(pk=long.pk)
        assert first.status == "succeeded" and second.started_at >= first.finished_at
        assert not HostTurn.objects.exists()  # given back
        print(f"host B started {waited:.2f} s after it was asked; the local host's second waited its turn")
    finally:
        stop_worker(process)
