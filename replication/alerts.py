"""Replication's alert rules: a task whose last run failed or stopped, and a task whose datasets were last
replicated longer ago than the threshold (lag). Registered with analytics from ReplicationConfig.ready()."""

from datetime import timedelta

from analytics.choices import Level, Rule
from analytics.hooks import alert_source
from replication import selectors

FAILED = Rule(
    "replication_failed", "Replication failed", Level.WARNING, help="A task's last run failed or stopped on a cause."
)
EMPTY = Rule(
    "replication_empty",
    "Replication sends nothing",
    Level.WARNING,
    help="A task that has never sent a snapshot and whose last runs found none to send: the data is not protected.",
)
PRUNING_HELD = Rule(
    "replication_pruning_held",
    "Replication pruning held",
    Level.WARNING,
    help="A run brought more new snapshots than the task prunes in one run (a source taken over can make them to "
    "push good snapshots out): pruning waits until an admin resumes it.",
)
OUTSIDE = Rule(
    "replication_outside_root",
    "Replication target changed outside its root",
    Level.CRITICAL,
    help="While a pair received, a dataset was made on the target outside every paired root.",
)
LAG = Rule(
    "replication_lag",
    "Replication behind",
    Level.WARNING,
    25,
    "hours",
    1,
    720,
    "A task whose datasets were last replicated longer ago than this (a daily task: 25).",
)


@alert_source(FAILED, LAG, EMPTY, PRUNING_HELD, OUTSIDE)
def replication_conditions(*, host, now, active):
    """On the sending host: its tasks' failures, lag, emptiness and held pruning; on the receiving host: datasets
    made outside a pair's root while it received."""
    if FAILED.key in active:
        for task in selectors.tasks_failing(source=host):
            yield FAILED.key, f"task {task.pk}", f"Replication {task} failed: {task.last_message[:200]}"
    if LAG.key in active:
        since = now - timedelta(hours=active[LAG.key].threshold)
        for task in selectors.tasks_behind(source=host, since=since):
            when = f"last replicated {task.replicated_at:%Y-%m-%d %H:%M}" if task.replicated_at else "never replicated"
            yield LAG.key, f"task {task.pk}", f"Replication {task} is behind: {when}"
    if EMPTY.key in active:
        for task in selectors.tasks_empty(source=host):
            yield (
                EMPTY.key,
                f"task {task.pk}",
                f"Replication {task} has sent nothing: its source has no snapshot to send",
            )
    if PRUNING_HELD.key in active:
        for task in selectors.tasks_pruning_held(source=host):
            yield PRUNING_HELD.key, f"task {task.pk}", f"Replication {task}: pruning held: {task.prune_held[:200]}"
    if OUTSIDE.key in active:
        for pair in selectors.pairs_intruded(target=host):
            yield OUTSIDE.key, f"pair {pair.pk}", f"Replication pair {pair}: {pair.intrusion[:300]}"
