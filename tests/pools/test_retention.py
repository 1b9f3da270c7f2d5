"""Retention: only the task's own snapshots, by count and by age, with exclusions; previewed from the inventory."""

from datetime import timedelta

from django.utils import timezone

from pools.models import Dataset, Pool, Snapshot, SnapshotTask
from pools.selectors import retention_victims


def inventory(host, now):
    pool = Pool.objects.create(host=host, name="tank", guid="1", state="ONLINE", observed_at=now)
    sets = {
        n: Dataset.objects.create(host=host, pool=pool, name=n, type="filesystem", observed_at=now)
        for n in ("tank/data", "tank/data/a", "tank/data/b")
    }
    for dataset in sets.values():
        for hours in range(6):  # auto-… every hour back, plus one manual snapshot
            Snapshot.objects.create(dataset=dataset, name=f"auto-{hours}", created_at=now - timedelta(hours=hours))
        Snapshot.objects.create(dataset=dataset, name="manual", created_at=now - timedelta(days=30))
    return sets


def names(victims):
    return [f"{s.dataset.name}@{s.name}" for s in victims]


def test_keep_count_deletes_the_oldest_of_the_tasks_own_snapshots(local_host):
    now = timezone.now()
    inventory(local_host, now)
    task = SnapshotTask.objects.create(host=local_host, dataset="tank/data", prefix="auto", keep_count=4)
    assert names(retention_victims(task=task, now=now)) == ["tank/data@auto-5", "tank/data@auto-4"]
    assert len(retention_victims(task=task, now=now, taking_one=True)) == 3  # the new one counts


def test_keep_days_and_the_manual_snapshot_is_never_touched(local_host):
    now = timezone.now()
    inventory(local_host, now)
    task = SnapshotTask.objects.create(host=local_host, dataset="tank/data", prefix="auto", keep_days=0)
    victims = names(retention_victims(task=task, now=now + timedelta(minutes=1)))
    assert len(victims) == 6 and "tank/data@manual" not in victims


def test_recursive_tasks_prune_children_except_the_excluded(local_host):
    now = timezone.now()
    inventory(local_host, now)
    task = SnapshotTask.objects.create(
        host=local_host, dataset="tank/data", prefix="auto", keep_count=5, recursive=True, exclude="tank/data/b\n"
    )
    assert names(retention_victims(task=task, now=now)) == ["tank/data@auto-5", "tank/data/a@auto-5"]


def test_a_task_is_due_after_its_interval(local_host):
    now = timezone.now()
    task = SnapshotTask(host=local_host, dataset="tank/data", every_minutes=15)
    assert task.is_due(now)
    task.last_run_at = now - timedelta(minutes=14)
    assert not task.is_due(now)
    task.last_run_at = now - timedelta(minutes=15)
    assert task.is_due(now) and task.snapshot_name(now).startswith("auto-")
