"""Replication's alert rules: a task whose last run failed or stopped, and a task whose datasets were last
replicated longer ago than the threshold (lag). Registered with analytics from ReplicationConfig.ready()."""

from datetime import timedelta

from analytics.choices import Level, Rule
from analytics.hooks import alert_source
from replication import selectors

FAILED = Rule(
    "replication_failed", "Replication failed", Level.WARNING, help="A task's last run failed or stopped on a cause."
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


@alert_source(FAILED, LAG)
def replication_conditions(*, host, now, active):
    """On the sending host: its tasks' failures and lag."""
    if FAILED.key in active:
        for task in selectors.tasks_failing(source=host):
            yield FAILED.key, f"task {task.pk}", f"Replication {task} failed: {task.last_message[:200]}"
    if LAG.key in active:
        since = now - timedelta(hours=active[LAG.key].threshold)
        for task in selectors.tasks_behind(source=host, since=since):
            when = f"last replicated {task.replicated_at:%Y-%m-%d %H:%M}" if task.replicated_at else "never replicated"
            yield LAG.key, f"task {task.pk}", f"Replication {task} is behind: {when}"
