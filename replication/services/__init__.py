"""Writes for replication: pair two hosts, save a task, run it. Every change is an Operation; the bytes go NAS to
NAS, never through Tarn, which lists both sides, plans by guid, follows the progress and holds the last common
snapshot. tarn-send runs as a transient unit on the NAS that dials: for a push the source (into tarn-recv, the pair
key's forced command on the target), for a pull the target (from tarn-serve, the forced command on the source, into
tarn-recv run locally). tarn-recv receives as the pair's own user, whom ZFS allows into the pair's root only.

By noun: pairs, tasks (and their schedule, failover, restore), runs (transfers, holds, retention)."""

from replication.services.pairs import (
    pair_intrusion_clear,
    pair_quota_start,
    pair_start,
    unpair_start,
)
from replication.services.runs import task_run_start
from replication.services.tasks import (
    failover_start,
    restore_start,
    task_delete_start,
    task_pruning_resume,
    task_retention_save,
    task_save,
    tasks_run_due,
)

__all__ = [
    "failover_start",
    "pair_intrusion_clear",
    "pair_quota_start",
    "pair_start",
    "restore_start",
    "task_delete_start",
    "task_pruning_resume",
    "task_retention_save",
    "task_run_start",
    "task_save",
    "tasks_run_due",
    "unpair_start",
]
