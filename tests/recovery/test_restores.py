"""Restores through Tarn's service and runner on a fake host (nothing runs: the commands are recorded, the unit's
status file answered as tarn-restore writes it; the copy itself is tests/hostlib/test_restore_helper.py's, on the
real snapshots the lab's): the refusals naming their field, the safety snapshot before a restore in place, the unit
started with its arguments in a root-only file, a stop passed on, one restore per dataset at a time."""

import json

import pytest
from django.utils import timezone

from appliance.operations import TargetBusy
from hostlib import restores
from hostlib.snapfiles import raw_of
from pools.models import Dataset, Pool, Snapshot
from recovery import services
from recovery.models import Restore
from recovery.services import restores as runner
from tests.support.runners import FakeHost

PATH = f"{raw_of('team')}/{raw_of('report.txt')}"
DONE = {"state": "done", "bytes": 15, "total": 15, "files": 1, "folders": 0, "links": 0, "skipped": 0}


@pytest.fixture
def docs(local_host):
    now = timezone.now()
    pool = Pool.objects.create(host=local_host, name="tank", guid="1", state="ONLINE", observed_at=now)
    docs = Dataset.objects.create(host=local_host, pool=pool, name="tank/docs", type="filesystem",
                                  mountpoint="/tank/docs", properties={"mounted": {"value": "yes"}}, observed_at=now)  # fmt: skip
    Snapshot.objects.create(dataset=docs, name="mon", createtxg=10, created_at=now)
    return docs


@pytest.fixture
def fake(monkeypatch):
    fake = FakeHost()
    fake.answer("systemctl", "show", stdout="ActiveState=inactive\nResult=success\n")
    monkeypatch.setattr(runner, "POLL_SECONDS", 0)
    monkeypatch.setattr(runner, "QUICK_SECONDS", 0)
    return fake.install(monkeypatch)


def answer_status(fake, job, said):
    fake.answer("cat", "--", restores.status_path(job), stdout=json.dumps(said))


@pytest.mark.parametrize(
    ("given", "field"),
    [
        ({"snapshot": "", "how": "beside"}, "snapshot"),
        ({"how": "sideways"}, "how"),
        ({"path": "", "how": "beside"}, "path"),
        ({"path": raw_of(".."), "how": "beside"}, "path"),
        ({"how": "place", "confirm": "REPORT.TXT"}, "confirm"),
        ({"snapshot": "gone", "how": "beside"}, "snapshot"),
    ],
)
def test_a_restore_is_refused_naming_the_field_and_nothing_starts(docs, local_host, admin_user, given, field):
    kwargs = {"snapshot": "mon", "path": PATH, **given}
    with pytest.raises(Exception) as refused:
        services.restore_start(host=local_host, user=admin_user, dataset="tank/docs", **kwargs)
    assert field in refused.value.message_dict, refused.value
    assert not Restore.objects.exists()


def test_in_place_takes_a_safety_snapshot_first_and_the_unit_gets_its_arguments_in_a_root_only_file(
    docs, local_host, admin_user, fake, run_queued
):
    def started(argv):
        answer_status(fake, Restore.objects.get().pk, DONE)

    fake.on("systemd-run", call=started)
    fake.answer("zpool", "get", "-H", "-o", "value", "feature@block_cloning", "--", "tank", stdout="active\n")
    op = run_queued(lambda **kw: services.restore_start(**kw).operation, host=local_host, user=admin_user,
                    dataset="tank/docs", snapshot="mon", path=PATH, how="place", confirm="report.txt")  # fmt: skip
    row = Restore.objects.get()
    assert op.status == "succeeded" and row.status == "done", (op.message, op.log)
    assert f"Restored restore {row.pk} from @mon in place: 1 files" in op.message
    assert "report.txt" not in op.message + op.log + json.dumps(op.params), "no file name where a viewer reads"
    changes = [a for a in fake.mutations if a[0] in ("zfs", "systemd-run", "write_file")]
    snap = next(i for i, a in enumerate(changes) if a[:2] == ["zfs", "snapshot"])
    unit = next(i for i, a in enumerate(changes) if a[0] == "systemd-run")
    assert snap < unit and changes[snap][-1].startswith("tank/docs@tarn-restore-") and row.safety == changes[snap][-1]
    args = dict(fake.writes)[restores.args_path(row.pk)]
    assert json.loads(args) == {"mount": "/tank/docs", "snapshot": "mon", "parts": PATH.split("/"), "how": "place",
                                "name": "", "job": row.pk, "cloning": True}  # fmt: skip
    assert ["write_file", restores.args_path(row.pk), "600"] in fake.mutations, "root's alone"
    assert "report.txt" not in " ".join(changes[unit]), "no name a user chose on the unit's command line"


def test_beside_takes_no_snapshot_and_a_stop_is_passed_on(docs, local_host, admin_user, fake, run_queued):
    state = {"polls": 0}

    def look(argv):  # copying until stopped: then the helper's last word
        row = Restore.objects.get()
        if argv[2] != restores.status_path(row.pk):
            return
        state["polls"] += 1
        if state["polls"] == 2:
            Restore.objects.filter(pk=row.pk).update(stop_requested=True)
        said = {"state": "stopped", "bytes": 5, "total": 15} if state.get("stopped") else {"state": "copying",
                                                                                         "bytes": 5, "total": 15}  # fmt: skip
        answer_status(fake, row.pk, said)
        fake.answer("systemctl", "show", stdout="ActiveState=%s\nResult=success\n" % (
            "inactive" if state.get("stopped") else "active"))  # fmt: skip

    fake.on("cat", "--", call=look)
    fake.on("systemctl", "stop", call=lambda argv: state.update(stopped=True))
    op = run_queued(lambda **kw: services.restore_start(**kw).operation, host=local_host, user=admin_user,
                    dataset="tank/docs", snapshot="mon", path=PATH, how="beside")  # fmt: skip
    row = Restore.objects.get()
    assert row.status == "stopped" and "nothing half-copied is left" in op.message, (op.message, op.log)
    assert not any(a[:2] == ["zfs", "snapshot"] for a in fake.argvs), "beside: the live copy is not touched"
    assert row.name == "report.txt.restored-mon"


def test_one_restore_per_dataset_at_a_time(docs, local_host, admin_user):
    services.restore_start(host=local_host, user=admin_user, dataset="tank/docs", snapshot="mon", path=PATH,
                           how="beside")  # fmt: skip
    with pytest.raises(TargetBusy):
        services.restore_start(host=local_host, user=admin_user, dataset="tank/docs", snapshot="mon", path=PATH,
                               how="beside")  # fmt: skip


def test_the_api_starts_a_restore_and_a_viewer_may_not(docs, local_host, operator_client, viewer_client):
    body = {"host": "local", "dataset": "tank/docs", "snapshot": "mon", "path": "team/report.txt", "how": "beside"}
    assert viewer_client.post("/api/v1/restores/", body, content_type="application/json").status_code == 403
    got = operator_client.post("/api/v1/restores/", body, content_type="application/json")
    assert got.status_code == 202 and got.json()["kind"] == "recovery.restore", got.json()
    listed = operator_client.get("/api/v1/restores/").json()["results"]
    assert listed[0]["shown"] == "team/report.txt" and listed[0]["how"] == "beside"
    bad = operator_client.post("/api/v1/restores/", {**body, "how": "place", "confirm": ""},
                               content_type="application/json")  # fmt: skip
    assert bad.status_code == 400 and "confirm" in bad.json()


def test_a_unit_that_ends_without_a_word_fails_the_restore(docs, local_host, admin_user, fake, run_queued):
    op = run_queued(lambda **kw: services.restore_start(**kw).operation, host=local_host, user=admin_user,
                    dataset="tank/docs", snapshot="mon", path=PATH, how="beside")  # fmt: skip
    assert op.status == "failed" and "ended without a word" in op.message, op.message
    assert Restore.objects.get().status == "failed"


def test_safety_snapshots_past_their_days_are_destroyed_and_held_ones_stay(docs, local_host):
    old = timezone.now() - timezone.timedelta(days=8)
    names = ("tarn-restore-old", "tarn-restore-held", "tarn-restore-admins", "tarn-restore-new")
    for name, holds in zip(names, (0, 1, 0, 0), strict=True):
        Snapshot.objects.create(dataset=docs, name=name, createtxg=5, created_at=old, holds=holds)
    for name in names[:2] + names[3:]:  # the admin's own tarn-restore-admins was made by no restore of Tarn's
        made = Restore.objects.create(host=local_host, dataset="tank/docs", snapshot="mon", path="61", shown="a",
                                      how="place", safety=f"tank/docs@{name}")  # fmt: skip
        Restore.objects.filter(pk=made.pk).update(created_at=old if name != "tarn-restore-new" else timezone.now())
    op = services.safety_snapshots_prune(host=local_host)
    assert op.kind == "pools.snapshot_destroy" and op.params["argvs"] == [["zfs", "destroy", "--",
                                                                           "tank/docs@tarn-restore-old"]], op.params  # fmt: skip
    Snapshot.objects.filter(name="tarn-restore-old").delete()
    assert services.safety_snapshots_prune(host=local_host) is None


def test_beside_takes_the_entrys_own_bytes_and_a_name_too_long_is_refused(docs, local_host, admin_user, fake,
                                                                          run_queued):  # fmt: skip
    odd = b"line\nbreak\xff"
    fake.on("systemd-run", call=lambda argv: answer_status(fake, Restore.objects.get().pk, DONE))
    run_queued(lambda **kw: services.restore_start(**kw).operation, host=local_host, user=admin_user,
               dataset="tank/docs", snapshot="mon", path=f"{raw_of('team')}/{odd.hex()}", how="beside")  # fmt: skip
    row = Restore.objects.get()
    args = json.loads(dict(fake.writes)[restores.args_path(row.pk)])
    assert bytes.fromhex(args["name"]) == odd + b".restored-mon" and row.shown == "team/line\\nbreak\\xff"
    with pytest.raises(Exception) as refused:
        services.restore_start(host=local_host, user=admin_user, dataset="tank/docs", snapshot="mon",
                               path=("x" * 250).encode().hex(), how="beside")  # fmt: skip
    assert "how" in refused.value.message_dict
