"""The ACL editor's services and pages against this machine's kernel (see conftest): a folder read and listed, an ACL
checked and resolved (refusals on the field that caused them, nothing written), risky changes asking for the
folder's name, one folder changed as an Operation, and everything inside counted, applied and stopped."""

import os
import subprocess
import time

import pytest
from django.core.exceptions import ValidationError

from appliance.models import Operation
from hostlib import acl, acl_helper
from hostlib.runner import PYTHON
from permissions import selectors, services
from permissions.choices import WalkStatus
from permissions.models import AclWalk

SHARED = {
    "owner": "",
    "group": "users",
    "owner_perms": "rwx",
    "group_perms": "rwx",
    "other_perms": "---",
    "setgid": True,
    "sticky": False,
    "defaults": True,
    "entries": [{"kind": "user", "name": "nobody", "perms": "r-x"}],
}


def getfacl(path) -> str:
    return subprocess.run(["getfacl", "--", str(path)], capture_output=True, text=True, check=True).stdout


def spec(**changes):
    return {**SHARED, **changes}


def errors(call) -> dict:
    with pytest.raises(ValidationError) as refused:
        call()
    return refused.value.message_dict


def test_a_folder_is_read_and_listed_live(dataset, here):
    where = services.place(host=dataset.host, dataset="tank/office", path="team")
    folder = services.folder_read(where=where)
    assert folder.owner == "root" and folder.text == getfacl(where.full)
    assert [f["name"] for f in services.folder_children(where=where)["folders"]] == ["sub"]


@pytest.mark.parametrize(
    ("dataset_name", "path", "field"),
    [("tank/nope", "", "dataset"), ("tank/office", "../..", "path"), ("tank/office", "a/\nb", "path")],
)
def test_an_unknown_dataset_or_a_path_leaving_it_is_refused_on_its_field(dataset, here, dataset_name, path, field):
    assert field in errors(lambda: services.place(host=dataset.host, dataset=dataset_name, path=path))


def test_a_missing_folder_or_a_link_is_refused_on_the_path(dataset, here, mount):
    (mount / "team" / "out").symlink_to("/etc")
    for path in ("missing", "team/out"):
        where = services.place(host=dataset.host, dataset="tank/office", path=path)
        assert "path" in errors(lambda w=where: services.folder_read(where=w))


@pytest.mark.parametrize(
    ("change", "field", "said"),
    [
        ({"entries": [{"kind": "user", "name": "no-such-user-x", "perms": "rwx"}]}, "entries-0-name", "No user"),
        ({"entries": [{"kind": "user", "name": "4000000", "perms": "rwx"}]}, "entries-0-name", "No account has the id"),
        ({"entries": [{"kind": "group", "name": "-rf", "perms": "rwx"}]}, "entries-0-name", "no leading"),
        ({"entries": [{"kind": "group", "name": "a:b", "perms": "rwx"}]}, "entries-0-name", "no ','"),
        ({"entries": [{"kind": "user", "name": "nobody", "perms": "rwz"}]}, "entries-0-perms", "r, w, x"),
        ({"entries": [{"kind": "user", "name": "nobody", "perms": "r--"}] * 2}, "entries-1-name", "twice"),
        (
            {
                "entries": [
                    {"kind": "user", "name": "nobody", "perms": "r--"},
                    {"kind": "user", "name": "65534", "perms": "r--"},
                ]
            },
            "entries-1-name",
            "named already",
        ),
        ({"owner": "no-such-user-x"}, "owner", "No user"),
        ({"group": "１００"}, "group", "No group"),  # fullwidth digits are a name, and no group has it
        ({"group_perms": "rw"}, "group_perms", "Three of"),
        ({"entries": [{"kind": "user", "name": "nobody", "perms": "rwx"}] * 8200}, "entries", "At most"),
    ],
)
def test_bad_acls_are_refused_on_their_field_and_nothing_changes(dataset, here, mount, admin_user, change, field, said):
    before = getfacl(mount / "team")
    got = errors(
        lambda: services.acl_set_start(
            host=dataset.host, user=admin_user, dataset="tank/office", path="team", spec=spec(**change)
        )
    )
    assert said in " ".join(got[field])
    assert getfacl(mount / "team") == before
    assert not Operation.objects.exists()


def test_one_folder_is_changed_as_an_operation_and_audited_by_name(dataset, here, mount, admin_user, run_queued):
    op = run_queued(
        services.acl_set_start, host=dataset.host, user=admin_user, dataset="tank/office", path="team", spec=spec()
    )
    assert op.status == "succeeded", op.message
    text = getfacl(mount / "team")
    assert "group:users:rwx" not in text  # the owning group is "users" now: group::rwx
    assert "# group: users" in text and "user:nobody:r-x" in text and "default:user:nobody:r-x" in text
    assert "# flags: -s-" in text
    assert "nobody" not in getfacl(mount / "team" / "doc.txt")  # one folder only
    mutations = [r.argv for r in here if r.mutating]
    assert mutations and all(len(" ".join(a)) < 2000 for a in mutations)  # the helper's name, not its source
    assert mutations[-1][:5] == [*PYTHON, acl.HELPER, "set"]


def test_taking_all_acls_away_needs_the_folders_name(dataset, here, mount, admin_user, run_queued):
    run_queued(
        services.acl_set_start, host=dataset.host, user=admin_user, dataset="tank/office", path="team", spec=spec()
    )
    bare = spec(entries=[], defaults=False)
    got = errors(
        lambda: services.acl_set_start(
            host=dataset.host, user=admin_user, dataset="tank/office", path="team", spec=bare
        )
    )
    assert "removes every ACL entry" in got["confirm"][0] and "type team" in got["confirm"][0]
    op = run_queued(
        services.acl_set_start,
        host=dataset.host,
        user=admin_user,
        dataset="tank/office",
        path="team",
        spec=bare,
        confirm="team",
    )
    assert op.status == "succeeded" and "nobody" not in getfacl(mount / "team")


def test_taking_the_owners_access_away_needs_the_folders_name(dataset, here, mount, admin_user):
    os.chown(mount / "team", 65534, 65534)
    locked = spec(owner_perms="-w-", entries=[])
    got = errors(
        lambda: services.acl_check(host=dataset.host, user=admin_user, dataset="tank/office", path="team", spec=locked)
    )
    assert "its owner nobody loses rx" in got["confirm"][0]
    os.chown(mount / "team", 0, 0)  # root passes every check: nothing to lose
    services.acl_check(host=dataset.host, user=admin_user, dataset="tank/office", path="team", spec=locked)
    services.acl_check(
        host=dataset.host, user=admin_user, dataset="tank/office", path="team", spec=locked, confirm="team"
    )


def test_an_acl_on_a_dataset_without_posix_acls_is_planned_first(dataset, here, admin_user):
    dataset.properties["acltype"]["value"] = "off"
    dataset.properties["xattr"]["value"] = "dir"
    dataset.save()
    checked = services.acl_check(host=dataset.host, user=admin_user, dataset="tank/office", path="team", spec=spec())
    assert any("acltype=posix" in step for step in checked.plan) and any("xattr=sa" in step for step in checked.plan)
    plain = spec(entries=[], defaults=False, setgid=False)
    assert (
        services.acl_check(host=dataset.host, user=admin_user, dataset="tank/office", path="team", spec=plain).plan
        == []
    )


def test_effective_permissions_walk_the_way_from_root(dataset, here, mount, admin_user, run_queued):
    run_queued(
        services.acl_set_start, host=dataset.host, user=admin_user, dataset="tank/office", path="team", spec=spec()
    )
    where = services.place(host=dataset.host, dataset="tank/office", path="team")
    folder = services.folder_read(where=where)
    said = services.effective_for(where=where, folder=folder, username="nobody")
    assert said["perms_here"] == 5 and "user nobody" in said["why_here"]
    stopped = [s for s in said["way"] if not s["passes"]]  # pytest's temporary folder is root's, 0700
    assert stopped and said["perms"] == 0 and stopped[0]["path"] in said["why"]
    assert services.effective_for(where=where, folder=folder, username="root")["root"]
    assert "user" in errors(lambda: services.effective_for(where=where, folder=folder, username="no-such-user-x"))


# --- everything inside -------------------------------------------------------------------------------------------


def test_a_walk_is_counted_then_applied_as_previewed(dataset, here, mount, admin_user, run_queued):
    walk = run_queued(
        services.walk_count_start, host=dataset.host, user=admin_user, dataset="tank/office", path="team", spec=spec()
    )
    assert walk.status == WalkStatus.PREVIEWED, walk.count_operation.message
    assert walk.preview["folders"] == 2 and walk.preview["files"] == 2 and walk.preview["changed"] == 4
    assert "nobody" not in getfacl(mount / "team")  # counting writes nothing
    op = run_queued(services.walk_apply_start, walk=walk, user=admin_user)
    walk.refresh_from_db()
    assert op.status == "succeeded" and walk.status == WalkStatus.APPLIED, op.message
    assert walk.applied["changed"] == 4
    assert "user:nobody:r--" in getfacl(mount / "team" / "doc.txt")  # no x for a document
    assert "user:nobody:r-x" in getfacl(mount / "team" / "run.sh") and "default:" in getfacl(mount / "team" / "sub")
    assert "#effective" not in getfacl(mount / "team" / "doc.txt")
    with pytest.raises(ValidationError, match="Only a previewed walk"):
        services.walk_apply_start(walk=walk, user=admin_user)


def test_a_stale_preview_is_counted_again_first(dataset, here, admin_user, run_queued):
    walk = run_queued(
        services.walk_count_start, host=dataset.host, user=admin_user, dataset="tank/office", path="team", spec=spec()
    )
    AclWalk.objects.filter(pk=walk.pk).update(
        previewed_at=walk.previewed_at - __import__("datetime").timedelta(hours=1)
    )
    walk.refresh_from_db()
    with pytest.raises(ValidationError, match="older than"):
        services.walk_apply_start(walk=walk, user=admin_user)


def test_a_walk_asked_to_stop_stops_between_two_files(dataset, here, mount, admin_user, run_queued, monkeypatch):
    big = mount / "team" / "big"
    big.mkdir()
    for i in range(20_000):
        (big / f"f{i}").touch()
    walk = run_queued(
        services.walk_count_start, host=dataset.host, user=admin_user, dataset="tank/office", path="team", spec=spec()
    )

    pause = time.sleep

    def stop_soon(seconds):
        pause(seconds / 50)
        current = AclWalk.objects.get(pk=walk.pk)
        if current.status == WalkStatus.APPLYING and current.applied.get("files"):
            services.walk_stop(walk=current, user=admin_user)

    monkeypatch.setattr("permissions.services.walks.pause", stop_soon)
    monkeypatch.setattr(acl_helper, "STATUS_EVERY", 0.0)
    op = run_queued(services.walk_apply_start, walk=walk, user=admin_user)
    walk.refresh_from_db()
    assert walk.status == WalkStatus.STOPPED and op.status == "succeeded", op.message
    assert walk.applied["stopped"] and 0 < walk.applied["files"] < 20_002
    written = sum(
        os.getxattr(p, acl_helper.ACCESS, follow_symlinks=False) is not None
        for p in big.iterdir()
        if p.name and _has_acl(p)
    )
    assert written <= walk.applied["files"]


def _has_acl(path) -> bool:
    try:
        os.getxattr(path, acl_helper.ACCESS)
    except OSError:
        return False
    return True


def test_the_systems_own_datasets_are_not_offered_or_edited(dataset, here):
    dataset.mountpoint = "/var/lib"
    dataset.save()
    assert selectors.mounted_names(host=dataset.host) == []
    assert "holds the system" in errors(lambda: services.place(host=dataset.host, dataset="tank/office"))["dataset"][0]


def test_an_apply_that_takes_acls_or_owners_away_below_needs_the_folders_name(
    dataset, here, mount, admin_user, run_queued
):
    walk = run_queued(
        services.walk_count_start, host=dataset.host, user=admin_user, dataset="tank/office", path="team", spec=spec()
    )
    run_queued(services.walk_apply_start, walk=walk, user=admin_user)
    bare = spec(entries=[], defaults=False, group="", setgid=False)
    again = run_queued(
        services.walk_count_start,
        host=dataset.host,
        user=admin_user,
        dataset="tank/office",
        path="team",
        spec=bare,
        confirm="team",
    )
    assert again.preview["acl_removed"] >= 4
    got = errors(lambda: services.walk_apply_start(walk=again, user=admin_user))
    assert "removes" in got["confirm"][0] and "type team" in got["confirm"][0]
    op = run_queued(services.walk_apply_start, walk=again, user=admin_user, confirm="team")
    assert op.status == "succeeded" and "nobody" not in getfacl(mount / "team" / "doc.txt")
    with pytest.raises(ValidationError, match="applied already"):  # a second click on the page it was shown on
        services.walk_apply_start(walk=again, user=admin_user, confirm="team")
    again.refresh_from_db()
    with pytest.raises(ValidationError, match="Only a previewed walk"):
        services.walk_apply_start(walk=again, user=admin_user, confirm="team")
    with pytest.raises(ValidationError, match="nothing to stop"):
        services.walk_stop(walk=again, user=admin_user)
