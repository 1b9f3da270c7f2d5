"""Reads for replication: pairs, tasks, their runs and what each dataset has on the target."""

from replication.models import DatasetState, Pair, Task, TaskRun


def pair_list():
    return Pair.objects.select_related("source", "target").order_by("pk")


def task_list():
    return Task.objects.select_related("pair__source", "pair__target").order_by("pk")


def task_runs(*, task, limit: int = 50):
    return TaskRun.objects.filter(task=task).select_related("operation")[:limit]


def dataset_states(*, task):
    return DatasetState.objects.filter(task=task).order_by("source")
