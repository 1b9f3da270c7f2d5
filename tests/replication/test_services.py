"""Replication's rules, checked before anything is queued: each bad input names its field and changes nothing."""

from datetime import datetime, timedelta

import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone

from analytics.selectors import conditions
from appliance.models import Host, Operation
from appliance.schedules import cron_due, cron_parse
from pools.models import Dataset, Pool, Snapshot
from replication import services
from replication.models import DatasetState, Pair, Task, TaskRun
from replication.services.runs import _ssh


def host_with(name: str, *datasets: str, snapshots: dict | None = None) -> Host:
    host = Host.objects.create(name=name, address=f"{name}.example", facts={"zfs_version": "zfs-2.3.2"})
    now = timezone.now()
    Pool.objects.create(host=host, name=datasets[0].split("/")[0], guid=name, state="ONLINE", observed_at=now)
    for dataset in datasets:
        add_dataset(host, dataset, (snapshots or {}).get(dataset, ()))
    return host


def ended_run(task: Task, status: str, **fields) -> TaskRun:
    """A run of the task whose operation ended so (a run's status is its operation's)."""
    op = Operation.objects.create(
        kind="replication.run", target=f"done:{task.pk}:{TaskRun.objects.count()}", host=task.pair.source, status=status
    )
    return TaskRun.objects.create(task=task, operation=op, **fields)


def add_dataset(host: Host, name: str, snapshots=()) -> None:
    """A filesystem (and its snapshots, oldest first) in the host's pool, as the inventory last read it."""
    now = timezone.now()
    row = Dataset.objects.create(
        host=host, pool=Pool.objects.get(host=host), name=name, type="filesystem", observed_at=now
    )
    for snap in snapshots:
        Snapshot.objects.create(dataset=row, name=snap, created_at=now)


@pytest.fixture
def hosts(db):
    source = host_with(
        "nas1", "tank", "tank/docs", "tank/docs/old", snapshots={"tank/docs": ("auto-1", "auto-2", "manual")}
    )
    target = host_with("nas2", "backup", "backup/lab")
    return source, target


@pytest.fixture
def pair(hosts):
    source, target = hosts
    return Pair.objects.create(source=source, target=target, address="10.78.0.2", root="backup/lab", status="paired")


@pytest.mark.parametrize(
    "change, field, says",
    [
        ({"address": "nas2"}, "address", "not an IP address"),
        ({"root": "backup/-x"}, "root", ""),
        ({"root": "backup/none"}, "root", "has no dataset backup/none"),
        ({"direction": "sideways"}, "direction", "push (the source dials) or pull"),
        ({"direction": "pull"}, "send_root", "A pull pair names what it may send"),
        ({"direction": "pull", "send_root": "tank/gone"}, "send_root", "nas1 has no dataset tank/gone"),
        ({"send_root": "tank"}, "send_root", "Only a pull pair names what it may send"),
        ({"port": 0}, "port", "1 to 65535"),
        ({"port": 65536}, "port", "1 to 65535"),
        ({"port": "22"}, "port", "1 to 65535"),
        ({"quota": 0}, "quota", "more than 0"),
        ({"quota": -5}, "quota", "more than 0"),
        ({"quota": "lots"}, "quota", "a size such as 2T"),
        ({"quota": "1.5T"}, "quota", "a size such as 2T"),
        ({"quota": "２T"}, "quota", "a size such as 2T"),
        ({"quota": 1 << 63}, "quota", "more than 0"),
        ({"root": "backup/lab\n"}, "root", ""),
        ({"root": "backup/lab "}, "root", ""),
    ],
)
def test_a_bad_pair_names_its_field_and_nothing_is_made(hosts, admin_user, change, field, says):
    source, target = hosts
    kwargs = {"source": source, "target": target, "address": "10.78.0.2", "root": "backup/lab", "user": admin_user}
    with pytest.raises(ValidationError) as raised:
        services.pair_start(**{**kwargs, "quota": "1T", **change})
    assert field in raised.value.message_dict and says in " ".join(raised.value.message_dict[field])
    assert not Pair.objects.exists() and not Operation.objects.exists()


def test_a_target_without_zfs_or_a_second_pair_into_the_same_root_is_refused(hosts, pair, admin_user):
    source, target = hosts
    with pytest.raises(ValidationError, match="already paired"):
        services.pair_start(
            source=source, target=target, address="10.78.0.2", root="backup/lab", user=admin_user, quota="1T"
        )
    Host.objects.filter(pk=target.pk).update(facts={})
    target.refresh_from_db()
    with pytest.raises(ValidationError, match="has no ZFS"):
        services.pair_start(
            source=source, target=target, address="10.78.0.2", root="backup/lab", user=admin_user, quota="1T"
        )
    assert Pair.objects.count() == 1 and not Operation.objects.exists()


@pytest.mark.parametrize(
    "change, field, says",
    [
        ({"source_dataset": "tank/nope"}, "source_dataset", "has no dataset tank/nope"),
        ({"source_dataset": "tank/../x"}, "source_dataset", ""),
        ({"target_name": "a/b"}, "target_name", "no '/'"),
        ({"target_name": ""}, "target_name", ""),
        ({"target_name": "-F"}, "target_name", ""),
        ({"excludes": ["gone"]}, "excludes", "tank/docs/gone does not exist"),
        ({"pattern": "hourly-*"}, "pattern", "No snapshot of tank/docs matches 'hourly-*'"),
        ({"limit": -1}, "limit", "0 for no limit"),
        ({"limit": "10"}, "limit", "0 for no limit"),
        ({"keep": -1}, "keep", "0 keeps all"),
        ({"keep": 1_000_000_000}, "keep", "0 keeps all"),
        ({"keep": 2**31}, "keep", "0 keeps all"),
        ({"keep": 10, "keep_hours": -1}, "keep_hours", "Hours"),
        ({"keep": 10, "prune_limit": 0}, "prune_limit", "Snapshots per dataset and run"),
        ({"source_dataset": "tank/docs "}, "source_dataset", ""),
        ({"target_name": "backup\n"}, "target_name", ""),
        ({"target_name": " docs"}, "target_name", ""),
        ({"pattern": "auto-*\n"}, "pattern", "one line"),
        ({"excludes": ["old\n"]}, "excludes", ""),
        ({"excludes": "old"}, "excludes", "A list of dataset paths"),
        ({"excludes": [3]}, "excludes", "A list of dataset paths"),
        ({"recursive": "yes"}, "recursive", "True or false"),
        ({"transport": "nc"}, "transport", "ssh, or tcp"),
        ({"every_minutes": 1}, "every_minutes", "Minutes from 5"),
        ({"cron": "0 2 * *"}, "cron", "Five fields"),
        ({"cron": "61 * * * *"}, "cron", "The minute: 61 is outside 0-59"),
        ({"cron": "0 2 0 * *"}, "cron", "The day of month: 0 is outside 1-31"),
        ({"cron": "0 2 * * 8"}, "cron", "The day of week: 8 is outside 0-7"),
        ({"cron": "٠ 2 * * *"}, "cron", "Digits 0-9"),
        ({"cron": "０ 2 * * *"}, "cron", "Digits 0-9"),
        ({"cron": "0 2 * * mon;reboot"}, "cron", "Digits 0-9"),
        ({"cron": "* * * * *"}, "cron", "1 minute(s) apart; at least 5"),
        ({"cron": "0,2 * * * *"}, "cron", "2 minute(s) apart; at least 5"),
        ({"cron": "0 0 31 2 *"}, "cron", "it never runs"),
        ({"cron": "0 0 30 2 *"}, "cron", "it never runs"),
        ({"cron": "0 2 * * *\n"}, "cron", "Digits 0-9"),
        ({"cron": ["0"]}, "cron", "Digits 0-9"),
    ],
)
def test_a_bad_task_names_its_field_and_nothing_is_saved(pair, change, field, says):
    kwargs = {"pair": pair, "source_dataset": "tank/docs", "target_name": "docs"}
    with pytest.raises(ValidationError) as raised:
        services.task_save(**{**kwargs, **change})
    assert field in raised.value.message_dict and says in " ".join(raised.value.message_dict[field])
    assert not Task.objects.exists()


def test_a_task_is_saved_once_per_target_and_only_on_a_ready_pair(pair):
    task = services.task_save(
        pair=pair, source_dataset="tank/docs", target_name="docs", pattern="auto-*", excludes=["/old/"]
    )
    assert (
        task.target_dataset == "backup/lab/docs"
        and task.excludes == ["old"]
        and task.hold_tag == f"tarn-repl-{task.pk}"
    )
    with pytest.raises(ValidationError, match="already sends to backup/lab/docs"):
        services.task_save(pair=pair, source_dataset="tank/docs/old", target_name="docs")
    Pair.objects.filter(pk=pair.pk).update(status="failed")
    pair.refresh_from_db()
    with pytest.raises(ValidationError, match="pair the hosts first"):
        services.task_save(pair=pair, source_dataset="tank/docs/old", target_name="old")


def test_a_pull_pair_is_made_from_the_target_and_its_tasks_stay_within_its_send_root(hosts, admin_user):
    source, target = hosts
    kwargs = {"source": source, "target": target, "address": "10.78.0.1", "root": "backup/lab", "user": admin_user}
    op = services.pair_start(**kwargs, direction="pull", send_root="tank/docs", quota="1T")
    pair = Pair.objects.get()
    assert pair.pulls and pair.send_root == "tank/docs" and op.host == source and str(pair).endswith("(pull)")
    assert pair.quota == 1 << 40
    Pair.objects.filter(pk=pair.pk).update(status="paired")
    pair.refresh_from_db()
    with pytest.raises(ValidationError) as raised:
        services.task_save(pair=pair, source_dataset="tank", target_name="all")
    assert "may only pull tank/docs and below" in raised.value.message_dict["source_dataset"][0]
    assert services.task_save(pair=pair, source_dataset="tank/docs/old", target_name="old").pair == pair
    with pytest.raises(ValidationError) as raised:
        services.task_save(pair=pair, source_dataset="tank/docs", target_name="docs", transport="tcp")
    assert "A pull pair's data goes through ssh" in raised.value.message_dict["transport"][0]


def test_a_tcp_task_tells_tarn_send_to_take_the_stream_off_ssh(pair):
    task = services.task_save(pair=pair, source_dataset="tank/docs", target_name="docs", transport="tcp")
    assert _ssh(task)["tcp"] is True and task.get_transport_display().startswith("SSH for control")
    plain = services.task_save(pair=pair, source_dataset="tank/docs/old", target_name="old")
    assert _ssh(plain)["tcp"] is False and _ssh(plain)["cipher"] == "aes128-gcm@openssh.com"
    assert _ssh(plain)["user"] == f"tarn-recv-{pair.pk}", "a push logs in as the pair's own user, never root"


def test_a_host_replicating_to_itself_may_not_nest_source_and_target(hosts):
    source, _ = hosts
    pair = Pair.objects.create(source=source, target=source, address="127.0.0.1", root="tank", status="paired")
    with pytest.raises(ValidationError, match="lie inside one another"):
        services.task_save(pair=pair, source_dataset="tank/docs", target_name="docs")


@pytest.mark.parametrize("minutes", [1, -5, 44641, "60"])
def test_a_clock_out_of_range_is_refused(pair, minutes):
    with pytest.raises(ValidationError) as raised:
        services.task_save(pair=pair, source_dataset="tank/docs", target_name="docs", every_minutes=minutes)
    assert "every_minutes" in raised.value.message_dict and not Task.objects.exists()


def test_beat_starts_a_task_when_its_clock_is_up_or_a_new_snapshot_waits(pair, django_capture_on_commit_callbacks):
    clock = services.task_save(pair=pair, source_dataset="tank/docs", target_name="clock", every_minutes=60)
    fresh = services.task_save(pair=pair, source_dataset="tank/docs", target_name="fresh", after_snapshots=True)
    manual = services.task_save(pair=pair, source_dataset="tank/docs", target_name="manual")
    now = timezone.now()
    with django_capture_on_commit_callbacks(execute=False):
        assert services.tasks_run_due(now) == 2
        assert services.tasks_run_due(now) == 0, "each is running: the next minute tries again"
    assert set(TaskRun.objects.values_list("task", flat=True)) == {clock.pk, fresh.pk}
    Operation.objects.update(status="succeeded")
    DatasetState.objects.create(task=fresh, source="tank/docs", target="backup/lab/fresh", snapshot="manual")
    with django_capture_on_commit_callbacks(execute=False):
        assert services.tasks_run_due(now + timedelta(minutes=59)) == 0, "up to date, and the clock is not up"
        assert services.tasks_run_due(now + timedelta(minutes=60)) == 1
    assert not TaskRun.objects.filter(task=manual).exists()


def test_a_cron_time_starts_a_task_once_and_a_missed_one_within_the_hour(pair, django_capture_on_commit_callbacks):
    task = services.task_save(pair=pair, source_dataset="tank/docs", target_name="nightly", cron=" 30  2 * * 1-5 ")
    assert task.cron == "30 2 * * 1-5"
    monday = timezone.make_aware(datetime(2026, 11, 23, 2, 30, 20))  # a Monday, server time (UTC here)
    cron = cron_parse(task.cron)
    assert cron_due(cron, None, monday)
    assert not cron_due(cron, monday, monday + timedelta(minutes=1)), "once per time"
    assert cron_due(cron, monday - timedelta(days=1), monday + timedelta(minutes=59)), "caught up"
    assert not cron_due(cron, None, monday + timedelta(minutes=61)), "too late: the next time"
    assert not cron_due(cron, None, monday - timedelta(days=1)), "not on a Sunday"
    assert not cron_due(cron, None, monday - timedelta(minutes=1))
    with django_capture_on_commit_callbacks(execute=False):
        assert services.tasks_run_due(monday - timedelta(minutes=1)) == 0
        assert services.tasks_run_due(monday) == 1
    task.refresh_from_db()
    assert task.last_run_at == monday and TaskRun.objects.filter(task=task).count() == 1


def test_a_failed_task_and_one_behind_raise_alerts_on_the_source(pair):
    task = services.task_save(pair=pair, source_dataset="tank/docs", target_name="docs")
    Task.objects.filter(pk=task.pk).update(created_at=timezone.now() - timedelta(days=2))
    ended_run(task, "failed", outcome="stopped", message="backup/lab/docs changed after @c")
    found = {(c.rule, c.subject): c.message for c in conditions(pair.source)}
    assert "changed after @c" in found[("replication_failed", f"task {task.pk}")]
    assert "never replicated" in found[("replication_lag", f"task {task.pk}")]
    ended_run(task, "succeeded")
    DatasetState.objects.create(task=task, source="tank/docs", target="backup/lab/docs", replicated_at=timezone.now())
    assert not [c for c in conditions(pair.source) if c.rule.startswith("replication")]
    assert not [c for c in conditions(pair.target) if c.rule.startswith("replication")], "raised on the source only"


@pytest.fixture
def replica(pair):
    """The task's replica on the target, with two snapshots, as the inventory last read it."""
    add_dataset(pair.target, "backup/lab/docs", ("auto-1", "auto-2"))
    return Task.objects.create(pair=pair, source_dataset="tank/docs", target_name="docs")


@pytest.mark.parametrize(
    "change, field, says",
    [
        ({"snapshot": "backup/lab/docs@gone"}, "snapshot", "not a snapshot of this task's replica"),
        ({"snapshot": "tank/docs@auto-1"}, "snapshot", "not a snapshot of this task's replica"),
        ({"how": "rollback"}, "how", "clone (on the target) or back"),
        ({"name": "backup/lab"}, "name", "exists already"),
        ({"name": "tank/restored"}, "name", "its snapshot's pool"),
        ({"how": "back", "name": "restored"}, "how", "Pair nas2 with nas1 first"),
        ({"name": "backup/lab/ab\u202ecd"}, "name", ""),  # a direction control in a name
    ],
)
def test_a_bad_restore_names_its_field_and_nothing_is_started(replica, admin_user, change, field, says):
    restore = {"snapshot": "backup/lab/docs@auto-1", "how": "clone", "name": "backup/lab/docs-restored", **change}
    with pytest.raises(ValidationError) as raised:
        services.restore_start(task=replica, user=admin_user, **restore)
    assert field in raised.value.message_dict and says in " ".join(raised.value.message_dict[field])
    assert not Operation.objects.exists() and Task.objects.count() == 1


def test_a_restore_is_a_read_only_clone_on_the_target_or_a_one_off_task_back(
    replica, admin_user, operator_user, django_capture_on_commit_callbacks
):
    restore = {"snapshot": "backup/lab/docs@auto-1", "how": "clone", "name": "backup/lab/docs-restored"}
    with pytest.raises(ValidationError, match="admin"):
        services.restore_start(task=replica, user=operator_user, **restore)
    with django_capture_on_commit_callbacks(execute=False):
        op = services.restore_start(task=replica, user=admin_user, **restore)
    assert op.host == replica.pair.target and op.params["argvs"] == [
        ["zfs", "clone", "-o", "readonly=on", "--", "backup/lab/docs@auto-1", "backup/lab/docs-restored"]
    ]
    source, target = replica.pair.source, replica.pair.target
    elsewhere = {"address": "10.78.0.2", "root": "tank", "status": "paired", "direction": "pull"}
    Pair.objects.create(source=target, target=source, send_root="backup/other", **elsewhere)
    with pytest.raises(ValidationError, match="Pair nas2 with nas1 first"):  # a pull pair that may not send it
        services.restore_start(task=replica, user=admin_user, **{**restore, "how": "back", "name": "restored"})
    Pair.objects.filter(direction="pull").delete()
    back = Pair.objects.create(source=target, target=source, address="10.78.0.1", root="tank", status="paired")
    with pytest.raises(ValidationError) as raised:
        services.restore_start(task=replica, user=admin_user, **{**restore, "how": "back", "name": "docs"})
    assert "tank/docs exists already on nas1" in " ".join(raised.value.message_dict["name"])
    with django_capture_on_commit_callbacks(execute=False):
        op = services.restore_start(task=replica, user=admin_user, **{**restore, "how": "back", "name": "restored"})
    one_off = Task.objects.get(pair=back)
    assert (one_off.source_dataset, one_off.target_dataset, one_off.pattern) == (
        "backup/lab/docs",
        "tank/restored",
        "auto-1",
    )
    assert not one_off.enabled and op.kind == "replication.run" and op.host == target
    assert TaskRun.objects.get(task=one_off).operation == op
