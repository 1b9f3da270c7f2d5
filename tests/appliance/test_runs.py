"""Run rows tied to their Operation (appliance.runs): a run whose worker died reads failed from its Operation the
moment the core's reaper fails it, with nothing mending the row; and every app's runs speak the one vocabulary."""

from datetime import timedelta

import pytest
from django.utils import timezone

import benchmarks.choices
import health.choices
import replication.choices
from appliance.api.serializers import RunStatusField
from appliance.choices import RunStatus
from appliance.models import Operation
from appliance.operations import operations_reap, operations_reap_lost
from appliance.runs import OperationRun
from benchmarks.api.serializers import RunSerializer
from benchmarks.models import Run
from benchmarks.selectors import runs_failed_since
from health.api.serializers import SelfTestRunSerializer
from health.models import SelfTestRun
from replication.api.serializers import TaskRunSerializer
from replication.models import Pair, Task, TaskRun
from replication.selectors import tasks_failing
from tests.replication.test_services import host_with

REAPED = "The worker running this operation stopped responding; marked failed by the reaper."
STALE = timedelta(minutes=5)


def running(kind: str, host, target: str) -> Operation:
    """An operation whose worker died an hour ago: still running in the database, its heartbeat stopped."""
    an_hour_ago = timezone.now() - timedelta(hours=1)
    return Operation.objects.create(
        kind=kind, target=target, host=host, status="running", started_at=an_hour_ago, heartbeat_at=an_hour_ago
    )


@pytest.fixture
def task(db):
    source, target = host_with("nas1", "tank", "tank/docs"), host_with("nas2", "backup", "backup/lab")
    pair = Pair.objects.create(source=source, target=target, address="10.78.0.2", root="backup/lab", status="paired")
    return Task.objects.create(pair=pair, source_dataset="tank/docs", target_name="docs")


def test_a_replication_run_whose_worker_died_reads_failed_with_the_reapers_word_at_once(task):
    op = running("replication.run", task.pair.source, f"host:nas1:replication:task-{task.pk}")
    run = TaskRun.objects.create(task=task, operation=op, sent=1 << 20)
    assert (run.status, run.is_active) == ("running", True)
    assert operations_reap(stale_after=STALE) == 1  # the core's stale-operation handling, and nothing else
    run = TaskRun.objects.select_related("operation").get(pk=run.pk)
    assert (run.status, run.is_active, run.status_message) == ("failed", False, REAPED)
    assert run.ended_at == run.operation.finished_at and (run.outcome, run.message, run.sent) == ("", "", 1 << 20)
    assert list(TaskRun.objects.status_in("failed")) == [run] and not TaskRun.objects.status_in("running")
    [failing] = tasks_failing(source=task.pair.source)  # the alert, before any next run
    assert (failing, failing.last_status, failing.last_message) == (task, "failed", REAPED)
    page = TaskRunSerializer(run).data
    assert (page["status"], page["message"], page["finished_at"] is not None) == ("failed", REAPED, True)


def test_a_benchmark_run_whose_worker_died_reads_failed_and_its_alert_is_raised(local_host):
    op = running("benchmarks.run", local_host, "host:local:benchmark")
    run = Run.objects.create(host=local_host, profile="seq-write-1", title="Seq", target="tank/a", operation=op)
    assert run.status == "queued", "its worker had not begun it"
    Run.objects.filter(pk=run.pk).update(started_at=op.started_at)
    assert Run.objects.select_related("operation").get(pk=run.pk).status == "running"
    assert operations_reap(stale_after=STALE) == 1
    run = Run.objects.select_related("operation").get(pk=run.pk)
    assert (run.status, run.outcome, run.finished_at) == ("failed", "", None), "read from the operation, not written"
    assert run.ended_at == run.operation.finished_at
    assert runs_failed_since(host=local_host, since=timezone.now() - timedelta(hours=1)) == [run]
    assert RunSerializer(run).data["status"] == "failed"


def test_a_run_whose_queued_message_was_lost_reads_failed(local_host):
    op = Operation.objects.create(kind="benchmarks.run", target="host:local:benchmark", host=local_host)
    Operation.objects.filter(pk=op.pk).update(created_at=timezone.now() - timedelta(hours=1))
    run = Run.objects.create(host=local_host, profile="seq-write-1", title="Seq", target="tank/a", operation=op)
    assert Run.objects.select_related("operation").get(pk=run.pk).status == "queued"
    assert operations_reap_lost(queued_ids=set(), older_than=STALE) == 1
    run = Run.objects.select_related("operation").get(pk=run.pk)
    assert run.status == "failed" and "queued message was lost" in run.status_message


def test_a_runs_own_end_comes_before_its_operations(local_host):
    """A cancelled benchmark's operation ends well; a suite's run ends before the suite's operation does."""
    op = Operation.objects.create(kind="benchmarks.run", target="host:local:benchmark", host=local_host)
    Operation.objects.filter(pk=op.pk).update(status="succeeded", finished_at=timezone.now())
    run = Run.objects.create(host=local_host, profile="p", title="t", target="tank/a", operation=op)
    Run.objects.filter(pk=run.pk).update(outcome="cancelled", message="Cancelled; its files are removed.")
    run = Run.objects.select_related("operation").get(pk=run.pk)
    assert (run.status, run.status_message) == ("cancelled", "Cancelled; its files are removed.")
    assert list(Run.objects.status_in("cancelled")) == [run] and not Run.objects.status_in("succeeded")


def test_every_apps_runs_speak_the_cores_one_vocabulary():
    for app in (benchmarks.choices, replication.choices, health.choices):
        assert not hasattr(app, "RunStatus"), f"{app.__name__} keeps words of its own"
    assert issubclass(Run, OperationRun) and issubclass(TaskRun, OperationRun)
    assert SelfTestRun._meta.get_field("status").choices == RunStatus.choices
    assert {v for v, _ in Run._meta.get_field("outcome").choices} == set(RunStatus.ended())
    for serializer in (RunSerializer, TaskRunSerializer, SelfTestRunSerializer):
        assert isinstance(serializer().fields["status"], RunStatusField), serializer.__name__


def test_the_run_vocabulary_holds_every_word_an_operation_ends_with():
    assert set(Operation._meta.get_field("status").choices) <= set(RunStatus.choices)
