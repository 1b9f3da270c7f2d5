"""Browsing snapshots through Tarn's pages and API on the local host, its dataset's mount a folder tree made here
(.zfs/snapshot/<name> as plain folders: no ZFS on this machine; the lab proves the real snapshots and their mounts,
tests/lab/test_recovery.py): what a page shows, the refusals naming their field, a viewer refused, versions."""

import json
import os
from pathlib import Path

import pytest
from django.utils import timezone

from appliance.models import AuditEntry
from hostlib import snapfiles
from hostlib.snapfiles import raw_of
from pools.models import Dataset, Pool, Snapshot
from tests.support.runners import FakeHost

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "host" / "recovery"


@pytest.fixture
def tree(tmp_path, local_host):
    root = tmp_path / "docs"
    snaps = root / ".zfs" / "snapshot"
    for name, text in (("a", "v1"), ("b", "v2")):
        (snaps / name / "team").mkdir(parents=True)
        (snaps / name / "team" / "report.txt").write_text(text)
    (root / "team").mkdir()
    (root / "team" / "report.txt").write_text("v2")
    os.utime(root / "team" / "report.txt", (1, 1))
    now = timezone.now()
    pool = Pool.objects.create(host=local_host, name="tank", guid="1", state="ONLINE", observed_at=now)
    docs = Dataset.objects.create(host=local_host, pool=pool, name="tank/docs", type="filesystem", mountpoint=str(root),
                                  properties={"mounted": {"value": "yes"}}, observed_at=now)  # fmt: skip
    for txg, name in ((10, "a"), (20, "b")):
        Snapshot.objects.create(dataset=docs, name=name, createtxg=txg, created_at=now)
    return root


def test_an_operator_browses_a_snapshot_and_sees_how_the_live_folder_differs(tree, operator_client):
    page = operator_client.get("/recovery/").content.decode()
    assert "?dataset=tank/docs" in page
    page = operator_client.get("/recovery/?dataset=tank/docs").content.decode()
    assert page.index(">b</a>") < page.index(">a</a>"), "newest first"
    got = operator_client.get(f"/recovery/?dataset=tank/docs&snapshot=b&path={raw_of('team')}")
    body = got.content.decode()
    assert got.status_code == 200 and "report.txt" in body and 'class="live-changed"' in body, body[-2000:]
    versions = f"/recovery/versions/?dataset=tank/docs&amp;path={raw_of('team')}/{raw_of('report.txt')}"
    assert versions in body
    live = operator_client.get(f"/recovery/?dataset=tank/docs&live=1&path={raw_of('team')}").content.decode()
    assert "report.txt" in live and "live-" not in live


def test_a_files_versions_group_the_snapshots_that_hold_the_same_file(tree, operator_client):
    path = f"{raw_of('team')}/{raw_of('report.txt')}"
    body = operator_client.get(f"/recovery/versions/?dataset=tank/docs&path={path}").content.decode()
    assert body.count("@b") >= 1 and body.count("@a") >= 1 and "version 2" in body, body[-1500:]
    api = operator_client.get("/api/v1/snapshot-files/versions/", {"host": "local", "dataset": "tank/docs",
                                                                   "path": "team/report.txt"}).json()  # fmt: skip
    assert [(v["newest"], v["count"], v["size"]) for v in api["versions"]] == [("b", 1, 2), ("a", 1, 2)]
    assert api["total"] == 2 and api["next_offset"] is None and api["live_size"] == 2
    one = operator_client.get("/api/v1/snapshot-files/versions/", {"host": "local", "dataset": "tank/docs",
                                                                   "path": "team/report.txt", "limit": 1}).json()  # fmt: skip
    assert one["looked"] == 1 and one["next_offset"] == 1


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ({"dataset": "tank/nope"}, "dataset"),
        ({"dataset": "tank/docs", "snapshot": "gone"}, "snapshot"),
        ({"dataset": "tank/docs", "snapshot": "b", "path": raw_of("..")}, "path"),
        ({"dataset": "tank/docs", "snapshot": "b", "path": "zz"}, "path"),
        ({"dataset": "tank/docs", "snapshot": "b", "path": raw_of("nothere")}, "path"),
    ],
)
def test_bad_places_are_refused_naming_the_field(tree, operator_client, query, field):
    got = operator_client.get("/recovery/", query)
    assert got.status_code == 400 and f"<strong>{field}</strong>" in got.content.decode()
    api = operator_client.get("/api/v1/snapshot-files/", {"host": "local", **query, "raw_path": query.get("path", "")})
    assert api.status_code == 400 and field in api.json(), api.json()


def test_a_viewer_may_not_read_file_names(tree, viewer_client):
    assert viewer_client.get("/recovery/?dataset=tank/docs&snapshot=b").status_code == 403
    assert viewer_client.get("/api/v1/snapshot-files/", {"host": "local", "dataset": "tank/docs"}).status_code == 403
    assert "Browse snapshots" not in viewer_client.get("/").content.decode()


def test_the_api_lists_a_folder_with_text_or_hex_paths(tree, operator_client):
    by_text = operator_client.get("/api/v1/snapshot-files/", {"host": "local", "dataset": "tank/docs",
                                                              "snapshot": "a", "path": "team"}).json()  # fmt: skip
    by_hex = operator_client.get("/api/v1/snapshot-files/", {"host": "local", "dataset": "tank/docs",
                                                             "snapshot": "a", "raw_path": raw_of("team")}).json()  # fmt: skip
    assert by_text == by_hex and by_text["total"] == 1
    assert by_text["entries"][0]["name"] == "report.txt" and by_text["entries"][0]["live"] == "changed"


def test_a_snapshot_destroyed_since_the_inventory_read_it_is_refused_on_the_snapshot_field(tree, operator_client):
    Snapshot.objects.create(dataset=Dataset.objects.get(name="tank/docs"), name="c", createtxg=30,
                            created_at=timezone.now())  # fmt: skip
    got = operator_client.get("/recovery/", {"dataset": "tank/docs", "snapshot": "c"})
    assert got.status_code == 400 and "<strong>snapshot</strong>: refusing snapshot c" in got.content.decode()


def test_a_file_is_downloaded_from_a_snapshot_in_chunks_and_the_download_is_audited(
    tree, operator_client, monkeypatch, settings
):
    big = tree / ".zfs/snapshot/b/team/big.bin"
    payload = os.urandom((9 << 20) + 123)  # three reads of 4 MiB
    big.write_bytes(payload)
    monkeypatch.setattr(snapfiles, "READ_CHUNK", 4 << 20)
    got = operator_client.get("/recovery/download/", {"dataset": "tank/docs", "snapshot": "b",
                                                      "path": f"{raw_of('team')}/{raw_of('big.bin')}"})  # fmt: skip
    assert got.status_code == 200 and b"".join(got.streaming_content) == payload
    assert got["Content-Disposition"] == 'attachment; filename="big.bin"' and got["Content-Length"] == str(len(payload))
    entry = AuditEntry.objects.filter(argv__0="snapshot-download").get()
    assert entry.argv[1:] == ["tank/docs@b", str(len(payload))] and entry.username == "oscar"
    assert entry.params == {"path": "team/big.bin"}, "the name where only admins read it, not in argv"
    settings.TARN_DOWNLOAD_MAX_MB = 8
    refused = operator_client.get("/api/v1/snapshot-files/download/", {"host": "local", "dataset": "tank/docs",
                                                                       "snapshot": "b", "path": "team/big.bin"})  # fmt: skip
    assert refused.status_code == 400 and "TARN_DOWNLOAD_MAX_MB" in refused.json()["path"][0]
    (tree / ".zfs/snapshot/b/team/link").symlink_to("/etc/shadow")
    linked = operator_client.get("/api/v1/snapshot-files/download/", {"host": "local", "dataset": "tank/docs",
                                                                      "snapshot": "b", "path": "team/link"})  # fmt: skip
    assert linked.status_code == 400 and "a link or not there" in linked.json()["path"][0]
    folder = operator_client.get("/api/v1/snapshot-files/download/", {"host": "local", "dataset": "tank/docs",
                                                                      "snapshot": "b", "path": "team"})  # fmt: skip
    assert folder.status_code == 400 and "not a regular file" in folder.json()["path"][0]


def test_what_changed_is_a_page_of_zfs_diff_under_the_folder_with_its_counts(tree, operator_client, monkeypatch):
    fake = FakeHost()
    lines = (FIXTURES / "zfs-diff-FHt.txt").read_text().replace("/tank/docs", str(tree)).splitlines()
    fake.answer("python3", stdout=json.dumps({"lines": lines[1:4], "counts": {"M": 3, "+": 4, "-": 1, "R": 2},
                                              "matched": 10, "total": 12}))  # fmt: skip
    fake.install(monkeypatch)
    got = operator_client.get("/api/v1/snapshot-files/changes/", {"host": "local", "dataset": "tank/docs",
                                                                  "since": "a", "path": "team"})  # fmt: skip
    body = got.json()
    assert got.status_code == 200 and body["counts"] == {"modified": 3, "added": 4, "removed": 1, "renamed": 2}
    assert [(c["change"], c["path"], c["new_path"]) for c in body["changes"]] == [
        ("added", "team/new.txt", ""), ("removed", "team/old.txt", ""), ("renamed", "team/a.txt", "team/b.txt")
    ]  # fmt: skip
    request = json.loads(fake.calls[-1].text)
    assert request["argv"] == ["zfs", "diff", "-F", "-H", "-t", "--", "tank/docs@a", "tank/docs"]
    assert request["prefix"] == b"team/".hex() and request["offset"] == 0
    page = operator_client.get("/recovery/changes/", {"dataset": "tank/docs", "since": "a", "to": "b",
                                                      "path": raw_of("team")}).content.decode()  # fmt: skip
    assert "10 changes under this folder (12 in the dataset)" in page and "team/b.txt" in page
    backwards = operator_client.get("/api/v1/snapshot-files/changes/", {"host": "local", "dataset": "tank/docs",
                                                                        "since": "b", "to": "a"})  # fmt: skip
    assert backwards.status_code == 400 and "not later than" in backwards.json()["to"][0]
