"""Reads for replication: pairs, tasks, their runs and what each dataset has on the target."""

from django.db.models import Min, OuterRef, Subquery

from replication.models import DatasetState, Pair, Task, TaskRun


def pair_list():
    return Pair.objects.select_related("source", "target").order_by("pk")


def task_list():
    return Task.objects.select_related("pair__source", "pair__target").order_by("pk")


def task_runs(*, task, limit: int = 50):
    return TaskRun.objects.filter(task=task).select_related("operation")[:limit]


def dataset_states(*, task):
    return DatasetState.objects.filter(task=task).order_by("source")


def task_overview():
    """Tasks with their last run's status and end, and the oldest of their datasets' last replication (the lag)."""
    last = TaskRun.objects.filter(task=OuterRef("pk")).order_by("-pk")
    return task_list().annotate(
        last_status=Subquery(last.values("status")[:1]),
        last_finished=Subquery(last.values("finished_at")[:1]),
        replicated_at=Min("datasets__replicated_at"),
    )
