"""The snapshot reader on a folder tree made here, laid out as a dataset's mount is (.zfs/snapshot/<name> as plain
folders: this machine has no ZFS, so nothing is automounted; the lab proves the mounts, tests/lab/test_recovery.py):
pages, names that are not text, links shown and never followed, '..' and links on the way refused, the live folder
compared, a path's versions."""

import fcntl
import json
import os
import time

import pytest

from hostlib import runner, snap_helper, snapfiles
from hostlib.errors import ConversationEnded, PathNotAllowed
from hostlib.runner import LocalTransport, python, source_of

raw = snapfiles.raw_of


@pytest.fixture
def mount(tmp_path):
    """A dataset mounted at tmp_path/docs with snapshots a (older) and b: report.txt changed between them and after,
    notes.txt the same, old.txt gone from the live folder, new.txt only live."""
    root = tmp_path / "docs"
    for where in (root / ".zfs" / "snapshot" / "a", root / ".zfs" / "snapshot" / "b", root):
        (where / "team").mkdir(parents=True)
    snaps = root / ".zfs" / "snapshot"
    for where, text in ((snaps / "a", "v1"), (snaps / "b", "v2"), (root, "v3 live")):
        (where / "team" / "report.txt").write_text(text)
        os.utime(where / "team" / "report.txt", (1_700_000_000 + len(text), 1_700_000_000 + len(text)))
    (snaps / "b" / "team" / "old.txt").write_text("gone now")
    (root / "team" / "new.txt").write_text("new")
    return root


def test_a_page_lists_folders_first_then_names_and_compares_with_the_live_folder(mount):
    (mount / ".zfs/snapshot/b/team/zz-folder").mkdir()
    page = snapfiles.folder(LocalTransport(), str(mount), "b", [raw("team")])
    assert [(e.name, e.type) for e in page.entries] == [
        ("zz-folder", "dir"),
        ("old.txt", "file"),
        ("report.txt", "file"),
    ]
    assert {e.name: e.live for e in page.entries} == {"zz-folder": "gone", "old.txt": "gone", "report.txt": "changed"}
    assert page.total == 3 and page.entries[2].size == 2 and page.entries[2].owner == "root"
    live = snapfiles.folder(LocalTransport(), str(mount), None, [raw("team")])
    assert [e.name for e in live.entries] == ["new.txt", "report.txt"] and live.entries[0].live is None


def test_pages_of_a_big_folder_follow_each_other(mount):
    big = mount / ".zfs/snapshot/b/big"
    big.mkdir()
    for i in range(2500):
        (big / f"f{i:05d}").touch()
    first = snapfiles.folder(LocalTransport(), str(mount), "b", [raw("big")], limit=1000)
    third = snapfiles.folder(LocalTransport(), str(mount), "b", [raw("big")], offset=2000, limit=1000)
    assert first.total == 2500 and len(first.entries) == 1000 and first.entries[0].name == "f00000"
    assert [e.name for e in third.entries][:2] == ["f02000", "f02001"] and len(third.entries) == 500
    assert {e.live for e in first.entries} == {"gone"}


def test_names_that_are_not_text_are_shown_escaped_and_named_back_exactly(mount):
    team = os.fsencode(mount / ".zfs/snapshot/b/team")
    for name in (b"line\nbreak", b"latin-\xe9", b"esc\x1b[31m"):
        with open(os.path.join(team, name), "wb") as fh:
            fh.write(b"x")
    page = snapfiles.folder(LocalTransport(), str(mount), "b", [raw("team")], live=False)
    shown = {e.name: e.raw for e in page.entries}
    assert {"line\\nbreak", "latin-\\xe9", "esc\\x1b[31m"} <= set(shown)
    assert bytes.fromhex(shown["latin-\\xe9"]) == b"latin-\xe9"
    odd = snapfiles.versions(LocalTransport(), str(mount), [raw("team"), shown["line\\nbreak"]], ["b", "a"])
    assert odd.snapshots[0]["stamp"] is not None and odd.snapshots[1]["stamp"] is None and odd.live is None


def test_a_link_is_shown_with_its_target_and_never_followed_nor_walked_through(mount):
    team = mount / ".zfs/snapshot/b/team"
    (team / "out").symlink_to("/etc")
    (team / "pw").symlink_to("/etc/shadow")
    page = snapfiles.folder(LocalTransport(), str(mount), "b", [raw("team")], live=False)
    links = {e.name: (e.type, e.target, e.size) for e in page.entries if e.type == "link"}
    assert links == {"out": ("link", "/etc", 4), "pw": ("link", "/etc/shadow", 11)}
    with pytest.raises(PathNotAllowed, match="out is a link or not a folder"):
        snapfiles.folder(LocalTransport(), str(mount), "b", [raw("team"), raw("out")])
    (mount.parent / "elsewhere").symlink_to(mount)
    with pytest.raises(PathNotAllowed, match="is a link or not a folder"):
        snapfiles.folder(LocalTransport(), str(mount.parent / "elsewhere"), "b", [])


@pytest.mark.parametrize("parts", [[".."], ["team", ".."], ["a/b"], [""], ["."]])
def test_dot_dot_and_slashes_are_refused_before_anything_is_opened(mount, parts):
    with pytest.raises(PathNotAllowed, match="only plain names"):
        snapfiles.folder(LocalTransport(), str(mount), "b", [raw(p) for p in parts])


@pytest.mark.parametrize("snapshot", ["..", "a/../../x", ""])
def test_a_snapshot_name_that_is_a_path_is_refused(mount, snapshot):
    with pytest.raises(PathNotAllowed, match="snapshot name"):
        snapfiles.folder(LocalTransport(), str(mount), snapshot, [])


def test_a_snapshot_destroyed_meanwhile_is_refused_by_name(mount):
    with pytest.raises(PathNotAllowed, match="refusing snapshot gone: gone does not exist there"):
        snapfiles.folder(LocalTransport(), str(mount), "gone", [])
    found = snapfiles.versions(LocalTransport(), str(mount), [raw("team"), raw("report.txt")], ["gone", "b"])
    assert found.snapshots[0] == {"snapshot": "gone", "stamp": None, "missing": True}


def test_versions_tell_the_snapshots_where_a_file_differs(mount):
    found = snapfiles.versions(LocalTransport(), str(mount), [raw("team"), raw("report.txt")], ["b", "a"])
    b, a = (s["stamp"] for s in found.snapshots)
    assert found.live and b and a and len({tuple(found.live), tuple(b), tuple(a)}) == 3
    assert b[1] == 2 and found.live[1] == 7  # sizes: "v2", "v3 live"
    notes = snapfiles.versions(LocalTransport(), str(mount), [raw("team"), raw("old.txt")], ["b", "a"])
    assert notes.live is None and notes.snapshots[0]["stamp"] and notes.snapshots[1]["stamp"] is None


def test_the_readers_slots_bound_how_many_run_at_once(mount, monkeypatch, tmp_path):
    monkeypatch.setattr(snap_helper, "LOCK_DIR", str(tmp_path / "locks"))
    monkeypatch.setattr(snap_helper, "SLOT_WAIT", 0.2)
    held = [snap_helper._slot() for _ in range(snap_helper.SLOTS)]
    with pytest.raises(snap_helper.Refused, match="busy: 4 snapshot reads"):
        snap_helper._slot()
    os.close(held.pop())
    again = snap_helper._slot()
    for fd in [*held, again]:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def test_a_folder_of_100000_entries_gives_its_first_and_last_pages(mount):
    big = mount / ".zfs/snapshot/b/many"
    big.mkdir()
    for i in range(100_000):
        os.close(os.open(big / f"n{i:06d}", os.O_CREAT | os.O_WRONLY, 0o644))
    first = snapfiles.folder(LocalTransport(), str(mount), "b", [raw("many")], limit=200, live=False)
    last = snapfiles.folder(LocalTransport(), str(mount), "b", [raw("many")], offset=99_900, limit=200, live=False)
    assert first.total == last.total == 100_000
    assert [e.name for e in first.entries][:2] == ["n000000", "n000001"] and len(first.entries) == 200
    assert [e.name for e in last.entries][-1] == "n099999" and len(last.entries) == 100


class OneShot(LocalTransport):
    """This machine without kept conversations: a reader run for each question (a transport that keeps none)."""

    def _kept_key(self):
        return None


def _reader_pids() -> set[int]:
    return {c.proc.pid for c in runner._kept.values()}


def test_pages_come_from_one_kept_reader_and_are_the_pages_a_reader_run_once_gives(mount):
    big = mount / ".zfs/snapshot/b/big"
    big.mkdir()
    for i in range(1500):
        (big / f"f{i:05d}").touch()
    runner.forget_conversations()
    kept = [snapfiles.folder(LocalTransport(), str(mount), "b", [raw("big")], offset=o, limit=500) for o in (0, 1000)]
    (pid,) = _reader_pids()
    entry = snapfiles.entry(LocalTransport(), str(mount), "b", [raw("team"), raw("report.txt")])
    found = snapfiles.versions(LocalTransport(), str(mount), [raw("team"), raw("report.txt")], ["b", "a"])
    size, data = snapfiles.read(LocalTransport(), str(mount), "b", [raw("team"), raw("report.txt")], offset=0,
                                length=10)  # fmt: skip
    assert _reader_pids() == {pid}  # one program answered the five questions
    once = [snapfiles.folder(OneShot(), str(mount), "b", [raw("big")], offset=o, limit=500) for o in (0, 1000)]
    assert kept == once and kept[1].entries[0].name == "f01000" and kept[0].total == 1500
    assert entry == snapfiles.entry(OneShot(), str(mount), "b", [raw("team"), raw("report.txt")])
    assert entry.live == "changed" and (size, data) == (2, b"v2") and found.snapshots[0]["stamp"][1] == 2
    runner.forget_conversations()


def test_a_refusal_through_the_kept_reader_is_the_same_refusal_and_the_reader_stays(mount):
    (mount / ".zfs/snapshot/b/team/out").symlink_to("/etc")
    runner.forget_conversations()
    for t in (LocalTransport(), OneShot()):
        with pytest.raises(PathNotAllowed, match="out is a link or not a folder"):
            snapfiles.folder(t, str(mount), "b", [raw("team"), raw("out")])
        with pytest.raises(PathNotAllowed, match="refusing snapshot gone: gone does not exist there"):
            snapfiles.folder(t, str(mount), "gone", [])
    (pid,) = _reader_pids()
    assert snapfiles.folder(LocalTransport(), str(mount), "b", [raw("team")]).total == 3 and _reader_pids() == {pid}
    runner.forget_conversations()


def test_a_kept_reader_gone_meanwhile_is_replaced_without_the_page_failing(mount):
    runner.forget_conversations()
    snapfiles.folder(LocalTransport(), str(mount), "b", [raw("team")])
    (talk,) = runner._kept.values()
    os.kill(talk.proc.pid, 9)  # as one whose idle time ran out on the host just as it was asked
    talk.proc.wait(5)
    assert snapfiles.folder(LocalTransport(), str(mount), "b", [raw("team")]).total == 2
    (again,) = runner._kept.values()
    assert again.proc.pid != talk.proc.pid and again.alive
    runner.forget_conversations()


def test_a_kept_reader_ends_by_itself_after_its_idle_time_or_at_the_end_of_its_input():
    idle = LocalTransport()._converse(python("-c", source_of(snap_helper), "serve", "0.3"))
    ended = LocalTransport()._converse(python("-c", source_of(snap_helper), "serve"))
    ended.proc.stdin.close()
    deadline = time.monotonic() + 10
    while (idle.proc.poll() is None or ended.proc.poll() is None) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert idle.proc.returncode == 0 and ended.proc.returncode == 0
    idle.close()
    ended.close()


def test_a_page_is_cut_from_folders_then_files_by_name_across_batches(tmp_path, monkeypatch):
    folder = os.fsencode(tmp_path / "mixed")
    os.mkdir(folder)
    names = [b"b\xff", b"B", b"\xc3\xa9t\xc3\xa9", b"a-file", b"\xe9t\xe9", b"zz", b"0", b"line\nbreak", b"~x"]
    for i, name in enumerate(names):
        if i % 3 == 0:
            os.mkdir(os.path.join(folder, name))
        else:
            open(os.path.join(folder, name), "wb").close()
    os.symlink(b"b\xff", os.path.join(folder, b"link-to-a-folder"))  # a link is not a folder, whatever it points to
    expected = sorted((not os.path.isdir(os.path.join(folder, n)) or os.path.islink(os.path.join(folder, n)),
                       os.fsdecode(n), n) for n in [*names, b"link-to-a-folder"])  # fmt: skip
    monkeypatch.setattr(
        snap_helper, "BATCH", 2
    )  # batches smaller than a page: what is kept goes on from one to the next
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for offset, limit in ((0, 3), (2, 4), (7, 5), (0, 100)):
            page, total = snap_helper._page(fd, offset, limit)
            assert total == 10 and page == [n for _, _, n in expected[offset : offset + limit]], (offset, limit)
    finally:
        os.close(fd)
    assert [n for _, _, n in expected] == [  # folders first; a byte that is not UTF-8 after every letter
        *(b"0", b"a-file", b"b\xff"),
        *(b"B", b"line\nbreak", b"link-to-a-folder", b"zz", b"~x", "été".encode(), b"\xe9t\xe9"),
    ]
    leaf = tmp_path / "leaf"  # no folder inside: its entries' types are not asked
    leaf.mkdir()
    for n in ("b", "a", "c", "link"):
        (leaf / n).touch() if n != "link" else (leaf / n).symlink_to(tmp_path)
    fd = os.open(leaf, os.O_RDONLY | os.O_DIRECTORY)
    try:
        assert snap_helper._page(fd, 1, 2) == ([b"b", b"c"], 4)
    finally:
        os.close(fd)


def test_a_reader_that_ends_as_it_is_asked_is_asked_again_the_usual_way(mount, monkeypatch):
    runner.forget_conversations()
    ran = []

    class Watched(LocalTransport):
        def run(self, argv, **kwargs):
            ran.append(argv[-1])
            return super().run(argv, **kwargs)

    monkeypatch.setattr(runner.Conversation, "ask", lambda *a, **k: (_ for _ in ()).throw(ConversationEnded(["x"])))
    page = snapfiles.folder(Watched(), str(mount), "b", [raw("team")])
    assert page.total == 2 and ran == ["list"], "answered by a reader run for it"
    runner.forget_conversations()


def test_the_kept_reader_answers_a_question_it_does_not_take_and_gives_up_on_one_past_its_deadline():
    serve = LocalTransport()._converse(python("-c", source_of(snap_helper), "serve"))
    try:
        said = json.loads(serve.ask(json.dumps({"command": "diff", "request": {}}).encode(), timeout=30))
        assert said == {"error": "not a question the reader takes"} and serve.alive
        held = []
        os.makedirs(snap_helper.LOCK_DIR, mode=0o700, exist_ok=True)
        for i in range(snap_helper.SLOTS):  # every slot taken: the question would wait SLOT_WAIT (20 s)
            fd = os.open(f"{snap_helper.LOCK_DIR}/slot-{i}", os.O_RDWR | os.O_CREAT, 0o600)
            fcntl.flock(fd, fcntl.LOCK_EX)
            held.append(fd)
        try:
            question = {"command": "list", "request": {"mount": "/", "parts": []}, "deadline": 0.5}
            os.write(serve.proc.stdin.fileno(), json.dumps(question).encode() + b"\n")
            started = time.monotonic()
            while serve.proc.poll() is None and time.monotonic() - started < 10:
                time.sleep(0.05)
            assert serve.proc.returncode == 0 and time.monotonic() - started < 3, "it gave up by itself"
        finally:
            for fd in held:
                os.close(fd)
    finally:
        serve.close()
