"""Attach/detach, add, trim, rename, clone and holds: exact argv queued, refusals name the field, and the API
offers the same operations as the pages (202 + the operation; 400 naming the field; roles enforced)."""

from datetime import timedelta

import pytest
from django.utils import timezone

from appliance.models import Operation
from pools.models import Dataset, MediaSpeed, Pool, ScrubSchedule, Snapshot, SnapshotTask, Vdev
from pools.selectors import retention_victims
from pools.services import scrub_schedules_run_due
from tests.pools.test_pool_create_view import D, disks


def only_argv():
    op = Operation.objects.get()
    return op.params["argvs"]


@pytest.mark.parametrize(
    "url, form, argv",
    [
        (
            "device",
            {"action": "attach", "device": D(1), "new_device": D(3), "confirm": "d1"},
            ["zpool", "attach", "--", "tank", D(1), D(3)],
        ),
        ("device", {"action": "detach", "device": D(2)}, ["zpool", "detach", "--", "tank", D(2)]),  # then labelclear
        ("trim", {"action": "start"}, ["zpool", "trim", "--", "tank"]),
        (
            "add",
            {"role": "data", "layout": "mirror", "disks": [D(3), D(4)]},
            ["zpool", "add", "--", "tank", "mirror", D(3), D(4)],
        ),
        ("add", {"role": "cache", "layout": "stripe", "disks": [D(5)]}, ["zpool", "add", "--", "tank", "cache", D(5)]),
    ],
)
def test_pool_actions_queue_the_exact_argv(admin_client, tank, django_capture_on_commit_callbacks, url, form, argv):
    pool = tank[0]
    with django_capture_on_commit_callbacks(execute=False):
        response = admin_client.post(f"/pools/{pool.pk}/{url}/", form)
    assert response.status_code == 302 and only_argv()[0] == argv
    if form["action" if "action" in form else "role"] == "detach":
        assert only_argv()[1] == ["zpool", "labelclear", "-f", "--", D(2)]


@pytest.mark.parametrize(
    "url, form, message",
    [
        ("device", {"action": "attach", "device": D(1), "new_device": D(2)}, "not a free disk"),
        ("device", {"action": "attach", "device": D(5), "new_device": D(3)}, "not a disk of tank"),
        ("device", {"action": "detach", "device": "/dev/vd9"}, "not a disk of tank"),
        ("trim", {"action": "--force"}, "not start, suspend or cancel"),
        ("add", {"role": "data", "layout": "raidz2", "disks": [D(3), D(4)]}, "raidz2 needs at least 3"),
    ],
)
def test_pool_action_refusals_say_why_and_queue_nothing(admin_client, tank, url, form, message):
    response = admin_client.post(f"/pools/{tank[0].pk}/{url}/", form, follow=True)
    assert message in response.content.decode() and not Operation.objects.exists()


def test_a_disk_outside_a_mirror_cannot_be_detached(admin_client, tank, local_host):
    pool = tank[0]
    Vdev.objects.create(pool=pool, position=9, name="d6", type="disk", role="data", state="ONLINE", path=D(6))
    response = admin_client.post(f"/pools/{pool.pk}/device/", {"action": "detach", "device": D(6)}, follow=True)
    assert "Only a disk of a mirror" in response.content.decode() and not Operation.objects.exists()


def test_rename_clone_and_hold_queue_the_exact_argv(operator_client, tank, django_capture_on_commit_callbacks):
    data = tank[2]
    for url, form, argv in [
        ("rename", {"new_name": "tank/b"}, ["zfs", "rename", "--", "tank/a", "tank/b"]),
        (
            "snapshots/clone",
            {"snapshot": "s1", "target": "tank/restore"},
            ["zfs", "clone", "--", "tank/a@s1", "tank/restore"],
        ),
        ("snapshots/hold", {"snapshot": "s1", "tag": "keep"}, ["zfs", "hold", "--", "keep", "tank/a@s1"]),
    ]:
        Operation.objects.all().delete()
        with django_capture_on_commit_callbacks(execute=False):
            operator_client.post(f"/pools/datasets/{data.pk}/{url}/", form)
        assert only_argv() == [argv], url


def test_rename_clone_and_hold_refusals_name_the_problem(operator_client, tank):
    data = tank[2]
    for url, form, message in [
        ("rename", {"new_name": "other/b"}, "stays in its pool"),
        ("rename", {"new_name": "tank/x/b"}, "parent tank/x is not a filesystem"),
        ("rename", {"new_name": "tank"}, "root dataset"),
        ("snapshots/clone", {"snapshot": "s1", "target": "tank/a"}, "exists already"),
        ("snapshots/clone", {"snapshot": "nope", "target": "tank/r"}, "No snapshot tank/a@nope"),
        ("snapshots/hold", {"snapshot": "s1", "tag": "-r"}, "hold tag"),
        ("snapshots/hold", {"snapshot": "s1", "tag": "tarn", "action": "release"}, "has no holds"),
    ]:
        response = operator_client.post(f"/pools/datasets/{data.pk}/{url}/", form, follow=True)
        assert message in response.content.decode(), (url, form)
    assert not Operation.objects.exists()


def test_held_snapshots_are_never_pruned(local_host, tank):

    data = tank[2]
    now = timezone.now()
    for i in range(4):
        Snapshot.objects.create(
            dataset=data, name=f"auto-{i}", created_at=now - timedelta(hours=4 - i), holds=int(i == 0)
        )
    task = SnapshotTask.objects.create(host=local_host, dataset="tank/a", prefix="auto", keep_count=1)
    assert [s.name for s in retention_victims(task=task, now=now)] == ["auto-1", "auto-2"]


def test_editable_disk_figures_drive_the_preview(admin_client, local_host):
    disks(local_host)
    response = admin_client.post("/pools/disks/", {"media": "hdd", "mb_s": 250, "iops": 90})
    assert response.status_code == 302 and MediaSpeed.objects.get(media="hdd").mb_s == 250
    page = admin_client.get("/pools/disks/").content.decode()
    assert "<td>250</td><td>90</td>" in page
    preview = admin_client.post(
        "/pools/create/",
        {
            "name": "tank",
            "layout": "mirror",
            "disks": [D(1), D(2)],
            "ashift": 12,
            "compression": "lz4",
            "atime": "off",
            "xattr": "sa",
            "casesensitivity": "sensitive",
            "sync": "standard",
            "preview": "1",
        },
        headers={"HX-Request": "true"},
    ).content.decode()
    assert "500 MB/s read" in preview and "90 IOPS" in preview
    bad = admin_client.post("/pools/disks/", {"media": "tape", "mb_s": 0, "iops": 90})
    assert bad.status_code == 200 and MediaSpeed.objects.count() == 1


def test_operators_may_not_change_disk_figures(operator_client, local_host):
    assert operator_client.post("/pools/disks/", {"media": "hdd", "mb_s": 1, "iops": 1}).status_code == 403


# --- the API ----------------------------------------------------------------------------------------
def test_the_api_starts_the_same_operations(admin_client, tank, django_capture_on_commit_callbacks):
    pool, _, data = tank
    snap = Snapshot.objects.get(name="s1")
    calls = [
        (
            "post",
            "/api/v1/pools/",
            {
                "host": "local",
                "name": "pool2",
                "data": [{"kind": "mirror", "disks": [D(3), D(4)]}],
                "root_properties": {"compression": "zstd"},
            },
            ["zpool", "create", "-O", "compression=zstd", "--", "pool2", "mirror", D(3), D(4)],
        ),
        ("post", f"/api/v1/pools/{pool.pk}/scrub/", {"action": "start"}, ["zpool", "scrub", "--", "tank"]),
        ("post", f"/api/v1/pools/{pool.pk}/add/", {"spare": [D(6)]}, ["zpool", "add", "--", "tank", "spare", D(6)]),
        (
            "post",
            f"/api/v1/pools/{pool.pk}/device/",
            {"action": "offline", "device": D(1), "confirm": "tank"},  # its mirror is left with no redundancy
            ["zpool", "offline", "--", "tank", D(1)],
        ),
        (
            "post",
            "/api/v1/datasets/",
            {"host": "local", "name": "tank/vol", "volsize": "1G"},
            ["zfs", "create", "-V", "1073741824", "--", "tank/vol"],
        ),
        (
            "patch",
            f"/api/v1/datasets/{data.pk}/",
            {"properties": {"compression": "zstd"}},
            ["zfs", "set", "compression=zstd", "--", "tank/a"],
        ),
        (
            "post",
            f"/api/v1/datasets/{data.pk}/rename/",
            {"new_name": "tank/c"},
            ["zfs", "rename", "--", "tank/a", "tank/c"],
        ),
        ("delete", f"/api/v1/datasets/{data.pk}/", {"confirm": "tank/a"}, ["zfs", "destroy", "-r", "--", "tank/a"]),
        (
            "post",
            "/api/v1/snapshots/",
            {"host": "local", "dataset": "tank/a", "name": "s2"},
            ["zfs", "snapshot", "--", "tank/a@s2"],
        ),
        (
            "post",
            f"/api/v1/snapshots/{snap.pk}/clone/",
            {"target": "tank/r"},
            ["zfs", "clone", "--", "tank/a@s1", "tank/r"],
        ),
        ("post", f"/api/v1/snapshots/{snap.pk}/hold/", {}, ["zfs", "hold", "--", "tarn", "tank/a@s1"]),
        (
            "post",
            "/api/v1/snapshots/destroy/",
            {"host": "local", "snapshots": ["tank/a@s1"]},
            ["zfs", "destroy", "--", "tank/a@s1"],
        ),
        ("delete", f"/api/v1/pools/{pool.pk}/", {"confirm": "tank"}, None),
    ]
    for method, url, body, argv in calls:
        Operation.objects.all().delete()
        with django_capture_on_commit_callbacks(execute=False):
            response = getattr(admin_client, method)(url, body, content_type="application/json")
        assert response.status_code == 202, (url, response.content)
        op = Operation.objects.get()
        assert response.json()["id"] == op.pk
        if argv:
            assert op.params["argvs"] == [argv], url
    assert op.kind == "pools.destroy" and op.params["argvs"][0] == ["zpool", "destroy", "--", "tank"]


def test_api_refusals_are_400s_naming_the_field(admin_client, operator_client, tank):
    pool, _, data = tank
    for client, method, url, body, field in [
        (
            admin_client,
            "post",
            "/api/v1/pools/",
            {"host": "local", "name": "raidz", "data": [{"kind": "mirror", "disks": [D(3), D(4)]}]},
            "name",
        ),
        (
            admin_client,
            "post",
            "/api/v1/pools/",
            {"host": "local", "name": "p", "data": [{"kind": "raid5", "disks": [D(3)]}]},
            "data",
        ),
        (admin_client, "post", "/api/v1/pools/", {"host": "nohost", "name": "p"}, "host"),
        (admin_client, "delete", f"/api/v1/pools/{pool.pk}/", {"confirm": "tan"}, "confirm"),
        (
            admin_client,
            "post",
            f"/api/v1/pools/{pool.pk}/add/",
            {"data": [{"kind": "mirror", "disks": [D(1), D(3)]}]},
            "disks",
        ),
        (operator_client, "patch", f"/api/v1/datasets/{data.pk}/", {"properties": {"recordsize": "3K"}}, "recordsize"),
        (operator_client, "post", f"/api/v1/datasets/{data.pk}/rename/", {"new_name": "tank/a/b"}, "new_name"),
    ]:
        response = getattr(client, method)(url, body, content_type="application/json")
        assert response.status_code == 400 and field in response.json(), (url, response.content)
    assert not Operation.objects.exists()
    assert operator_client.post(f"/api/v1/pools/{pool.pk}/export/").status_code == 403
    assert operator_client.post(f"/api/v1/pools/{pool.pk}/trim/", {"action": "start"}).status_code == 202


def test_a_scrub_schedule_starts_a_scrub_when_due_and_not_again_until_the_next_period(
    operator_client, tank, django_capture_on_commit_callbacks
):

    pool = tank[0]
    operator_client.post(f"/pools/{pool.pk}/scrub/schedule/", {"every_days": "30"})
    assert ScrubSchedule.objects.get().every_days == 30
    bad = operator_client.post(f"/pools/{pool.pk}/scrub/schedule/", {"every_days": "400"}, follow=True)
    assert "From 1 to 365" in bad.content.decode() and ScrubSchedule.objects.get().every_days == 30
    with django_capture_on_commit_callbacks(execute=False):
        assert scrub_schedules_run_due() == 1
        assert scrub_schedules_run_due() == 0  # started: not due again for 30 days
    assert only_argv() == [["zpool", "scrub", "--", "tank"]]
    ScrubSchedule.objects.update(last_run_at=timezone.now() - timedelta(days=31))
    Operation.objects.all().delete()
    Pool.objects.filter(pk=pool.pk).update(scan_state="SCANNING")
    assert scrub_schedules_run_due() == 0  # a scan is running: wait
    operator_client.post(f"/pools/{pool.pk}/scrub/schedule/", {"every_days": "0"})
    assert not ScrubSchedule.objects.exists()


def test_the_snapshot_list_destroys_several_in_one_operation(operator_client, tank, django_capture_on_commit_callbacks):
    data = tank[2]
    Snapshot.objects.create(dataset=data, name="s2", created_at=timezone.now())
    Snapshot.objects.create(dataset=data, name="kept", created_at=timezone.now(), holds=1)
    page = operator_client.get("/pools/snapshots/").content.decode()
    assert 'value="tank/a@s1"' in page and 'value="tank/a@s2"' in page and 'value="tank/a@kept"' not in page
    with django_capture_on_commit_callbacks(execute=False):
        response = operator_client.post(
            "/pools/snapshots/destroy/", {"snapshots": ["tank/a@s1", "tank/a@s2"], "next": "/pools/snapshots/"}
        )
    assert response.status_code == 302
    assert only_argv() == [["zfs", "destroy", "--", "tank/a@s1"], ["zfs", "destroy", "--", "tank/a@s2"]]


@pytest.mark.parametrize(
    "body, field",
    [
        ({"action": "detach"}, "device"),
        ({"action": "offline"}, "device"),
        ({"action": "replace", "device": D(1)}, "new_device"),
        ({"action": "explode", "device": D(1)}, "action"),
    ],
)
def test_a_device_action_missing_its_disk_is_a_400_naming_the_field(admin_client, tank, body, field):
    response = admin_client.post(f"/api/v1/pools/{tank[0].pk}/device/", body, content_type="application/json")
    assert response.status_code == 400 and field in response.json(), response.content
    assert not Operation.objects.exists()


def test_the_page_and_the_api_find_the_same_snapshots(admin_client, tank, local_host):
    pool, root, data = tank
    other = Dataset.objects.create(
        host=local_host, pool=pool, name="tank/photos", type="filesystem", depth=1, observed_at=timezone.now()
    )
    now = timezone.now()
    for dataset, name in ((data, "auto-2026-11-01"), (data, "manual"), (other, "auto-2026-11-02"), (other, "keep")):
        Snapshot.objects.create(dataset=dataset, name=name, created_at=now)
    for q, expected in (
        ("auto-2026", {"tank/a@auto-2026-11-01", "tank/photos@auto-2026-11-02"}),
        ("photo", {"tank/photos@auto-2026-11-02", "tank/photos@keep"}),
        ("tank/a@man", {"tank/a@manual"}),
        ("nothing", set()),
    ):
        page = admin_client.get("/pools/snapshots/", {"q": q}).context["page"]
        api = admin_client.get("/api/v1/snapshots/", {"q": q, "host": "local"}).json()["results"]
        assert {s.full_name for s in page} == expected, q
        assert {f"{s['dataset']}@{s['name']}" for s in api} == expected, q


@pytest.fixture
def two_snapshots(tank):
    """tank/a@s1 (from the tank fixture) and a newer tank/a@s2: rolling back to s1 destroys s2."""
    Snapshot.objects.create(dataset=tank[2], name="s2", created_at=timezone.now() + timedelta(minutes=1))
    return tank[2]


def test_a_rollback_past_newer_snapshots_needs_an_admin_and_the_name_typed(
    admin_client, operator_client, two_snapshots, django_capture_on_commit_callbacks
):
    url = f"/pools/datasets/{two_snapshots.pk}/snapshots/rollback/"
    refused = operator_client.post(url, {"snapshot": "s1", "confirm": "s1"}, follow=True)
    assert "only an admin" in refused.content.decode() and not Operation.objects.exists()
    wrong = admin_client.post(url, {"snapshot": "s1", "confirm": "s2"}, follow=True)
    assert "type the snapshot&#x27;s name (s1)" in wrong.content.decode() and not Operation.objects.exists()
    api = admin_client.post(
        f"/api/v1/snapshots/{Snapshot.objects.get(name='s1').pk}/rollback/",
        {"destroy_newer": True},
        content_type="application/json",
    )
    assert api.status_code == 400 and "confirm" in api.json()
    with django_capture_on_commit_callbacks(execute=False):
        admin_client.post(url, {"snapshot": "s1", "confirm": "s1"})
    assert only_argv() == [["zfs", "rollback", "-r", "--", "tank/a@s1"]]


@pytest.mark.parametrize("nxt", ["https://evil.example/", "//evil.example/x", "javascript:alert(1)", "evil.example"])
def test_next_never_leaves_the_site(admin_client, local_host, nxt):
    switched = admin_client.post("/hosts/switch/", {"host": local_host.pk, "next": nxt})
    assert switched.status_code == 302 and switched["Location"] == "/"
    destroyed = admin_client.post("/pools/snapshots/destroy/", {"snapshots": [], "next": nxt})
    assert destroyed["Location"] == "/pools/snapshots/"


def test_next_keeps_a_path_on_the_site(admin_client, local_host):
    switched = admin_client.post("/hosts/switch/", {"host": local_host.pk, "next": "/pools/disks/"})
    assert switched["Location"] == "/pools/disks/"
