"""hostlib.acl and its on-host helper, against this machine's kernel: the xattrs it writes are the ones setfacl
would (getfacl reads them back), what `effective` says a user may do is what the kernel lets that user do, and a
walk changes nothing through a link, a hard link or another filesystem, and stops between two files."""

import errno
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hostlib import acl, acl_helper
from hostlib.acl import GROUP, GROUP_OBJ, MASK, OTHER, USER, USER_OBJ, Acl
from hostlib.errors import PathNotAllowed
from hostlib.runner import LocalTransport, source_of
from tests.conftest import require
from tests.support.runners import FakeHost, program


@pytest.fixture
def root():
    """Tests that change owners, mount a tmpfs or read as other users: root's (skipped outside CI without it, a
    failure under CI=true, as every missing tool is)."""
    require(os.geteuid() == 0, "the test changes owners and reads as other users: it needs root")


def _getfacl(path) -> str:
    return subprocess.run(["getfacl", "--", str(path)], capture_output=True, text=True, check=True).stdout


@pytest.fixture
def tree(tmp_path):
    (tmp_path / "team" / "a" / "b").mkdir(parents=True)
    (tmp_path / "team" / "doc.txt").write_text("x")
    (tmp_path / "team" / "run.sh").write_text("#!/bin/sh\n")
    (tmp_path / "team" / "run.sh").chmod(0o755)
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret").write_text("s")
    return tmp_path


def test_an_acl_round_trips_through_the_kernel_as_getfacl_reads_it(tree):
    wanted = acl.build(7, 5, 0, {65534: 6}, {100: 5})
    os.setxattr(tree / "team", acl_helper.ACCESS, wanted.encode())
    os.setxattr(tree / "team", acl_helper.DEFAULT, wanted.encode())
    os.chmod(tree / "team", 0o2770)  # setgid: getfacl's flags line
    assert Acl.decode(os.getxattr(tree / "team", acl_helper.ACCESS)) == wanted
    folder = acl.read(LocalTransport(), str(tree), ["team"])
    assert folder.text == _getfacl(tree / "team")
    assert folder.names == {("u", 65534): "nobody", ("g", 100): "users"}


def test_getfacl_text_marks_what_the_mask_takes_away(tree):
    os.setxattr(tree / "team", acl_helper.ACCESS, acl.build(7, 7, 0, {65534: 7}, {}).encode())
    os.chmod(tree / "team", 0o750)  # the group bits are the mask's: r-x
    folder = acl.read(LocalTransport(), str(tree), ["team"])
    assert "#effective:r-x" in folder.text
    assert folder.text == _getfacl(tree / "team")


def test_the_mask_is_the_union_of_the_group_class_and_entries_are_in_the_kernels_order():
    built = acl.build(6, 4, 0, {2000: 1, 1000: 4}, {300: 2})
    assert [e.tag for e in built.entries] == [USER_OBJ, USER, USER, GROUP_OBJ, GROUP, MASK, OTHER]
    assert [e.id for e in built.named] == [1000, 2000, 300]
    assert built.get(MASK).perms == 4 | 1 | 4 | 2
    assert acl.build(7, 5, 5, {}, {}).minimal


def test_an_acl_past_the_kernels_limit_is_refused_naming_the_field():
    with pytest.raises(acl.InvalidAcl) as refused:
        acl.build(7, 5, 0, {uid: 7 for uid in range(10_000, 10_000 + acl.MAX_ENTRIES)}, {})
    assert "entries" in refused.value.problems
    assert len(acl.build(7, 5, 0, {uid: 7 for uid in range(acl.MAX_ENTRIES - 4)}, {}).encode()) <= 65536


@pytest.mark.parametrize(
    "name",
    ["-", "--", "-rf", "a,b", "a:b", "a\nb", "tab\there", "nul\0", " lead", "trail ", "", "x" * 300, "bell\x07"],
)
def test_names_that_could_be_read_as_options_or_separators_are_refused(name):
    problems = {}
    acl.check_name(name, "entry-0-name", problems)
    assert "entry-0-name" in problems


@pytest.mark.parametrize("name", ["alice", "TARN\\carol", "Domain Users", "o'brien", "svc$", "josé", "1001"])
def test_names_of_local_and_domain_accounts_pass(name):
    problems = {}
    acl.check_name(name, "name", problems)
    assert problems == {}


@pytest.mark.parametrize("path", ["../etc", "a/../../etc", "./a", "a/.zfs/snapshot", "a\nb", "a\x00b", "x" * 5000])
def test_folders_outside_the_dataset_or_with_control_characters_are_refused(path):
    problems = {}
    assert acl.check_relative(path, problems) == []
    assert "path" in problems


def test_a_link_on_the_way_to_a_folder_is_refused_never_followed(tree):
    (tree / "team" / "link").symlink_to(tree / "outside")
    with pytest.raises(PathNotAllowed, match="a link or not a folder"):
        acl.read(LocalTransport(), str(tree), ["team", "link"])
    os.symlink(tree / "team", tree / "via")
    with pytest.raises(PathNotAllowed):
        acl.read(LocalTransport(), str(tree / "via"), [])


def test_a_listing_shows_subfolders_only_and_counts_names_it_cannot_show(tree):
    (tree / "team" / "c").symlink_to(tree / "outside")
    os.mkdir(os.path.join(os.fsencode(tree / "team"), b"bad\xffname"))
    os.mkdir(tree / "team" / "new\nline")
    listed = acl.children(LocalTransport(), str(tree), ["team"])
    assert [f["name"] for f in listed["folders"]] == ["a"]
    assert listed["hidden"] == 2
    assert acl.children(LocalTransport(), str(tree), ["team"], limit=0)["more"] == 1


def test_names_and_ids_resolve_through_nss_and_unknown_ones_do_not():
    found = acl.resolve(LocalTransport(), ["root", "0", "no-such-user-x", "4294967294"], ["users", "１００"])
    assert found["users"] == {"root": [0, "root"], "0": [0, "root"], "no-such-user-x": None, "4294967294": None}
    assert found["groups"] == {"users": [100, "users"], "１００": None}  # fullwidth digits are a name, not an id
    assert acl.account(LocalTransport(), "root")["gids"] == [0]
    assert acl.account(LocalTransport(), "no-such-user-x") is None


# --- effective permissions against the kernel ----------------------------------------------------------------------


def _kernel_allows(path: Path, uid: int, gids: list[int]) -> int:
    """What the kernel lets uid (in gids) do on path: access(2) in a child that became that user, the folder
    named relative to its parent opened before (the folders above are not the user's to traverse)."""
    parent = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.setgroups(gids)
            os.setresgid(gids[0], gids[0], gids[0])
            os.setresuid(uid, uid, uid)
            modes = ((4, os.R_OK), (2, os.W_OK), (1, os.X_OK), (8, os.W_OK | os.X_OK), (16, os.R_OK | os.W_OK))
            got = sum(bit for bit, mode in modes if os.access(path.name, mode, dir_fd=parent))
            os.write(write, bytes([got]))
        finally:
            os._exit(0)
    os.close(write)
    os.close(parent)
    os.waitpid(pid, 0)
    got = os.read(read, 1)
    os.close(read)
    return got[0]


def test_effective_permissions_are_what_the_kernel_grants_for_random_acls(tmp_path, root):
    folder = tmp_path / "f"
    folder.mkdir()
    tmp_path.chmod(0o711)  # "f" looked up in it by anyone; the folders above are never walked (dir_fd)
    os.chown(folder, 5000, 6000)
    rng = random.Random(43)
    for _ in range(40):
        users = {uid: rng.randrange(8) for uid in rng.sample([5001, 5002, 5003], rng.randrange(3))}
        groups = {gid: rng.randrange(8) for gid in rng.sample([6001, 6002, 6003], rng.randrange(3))}
        built = acl.build(rng.randrange(8), rng.randrange(8), rng.randrange(8), users, groups)
        os.setxattr(folder, acl_helper.ACCESS, built.encode())
        if rng.random() < 0.3:  # a mask narrower than the union (chmod g-… on an extended ACL)
            os.chmod(folder, os.stat(folder).st_mode & ~(rng.randrange(8) << 3))
        on_disk = acl.read(LocalTransport(), str(tmp_path), ["f"]).access
        for uid in (5000, 5001, 5002, 5009):
            gids = [6000 + rng.randrange(4)] + rng.sample([6001, 6002, 6003, 6009], rng.randrange(3))
            said = acl.effective(on_disk, 5000, 6000, uid, set(gids))
            kernel = _kernel_allows(folder, uid, gids)
            assert said.perms == kernel & 7, (on_disk, uid, gids, said.why)
            assert said.together == {"wx": bool(kernel & 8), "rw": bool(kernel & 16)}, (on_disk, uid, gids)


def test_two_groups_that_each_grant_half_do_not_grant_both_at_once():
    a = acl.build(7, 0, 0, {}, {7001: 6, 7002: 5})  # rw- and r-x: write alone and enter alone, never both
    said = acl.effective(a, 1000, 100, 1001, {7001, 7002})
    assert said.perms == 7 and said.together == {"wx": False, "rw": True}


def test_effective_permissions_say_which_entry_decides():
    a = acl.build(7, 5, 0, {1001: 7}, {2002: 6})
    names = {("u", 1001): "carol", ("g", 2002): "staff"}
    assert "owner" in acl.effective(a, 1000, 100, 1000, {100}, names).why
    assert "user carol" in acl.effective(a, 1000, 100, 1001, {9}, names).why
    both = acl.effective(a, 1000, 100, 1002, {100, 2002}, names)
    assert both.perms == 7 and "owning group" in both.why and "group staff" in both.why
    assert "everyone else" in acl.effective(a, 1000, 100, 1003, {9}, names).why


# --- changing ------------------------------------------------------------------------------------------------------


def _spec(**kw):
    shared = acl.build(7, 7, 0, {}, {100: 7})
    return acl.spec(shared, shared, **kw)


def _walk(root, parts, spec, write=True, status=None, cls=acl_helper.Walk):
    walk = cls(acl_helper.Spec(spec), write, str(status or Path(root) / ".status"))
    walk.run(str(root), parts)
    return walk.counts


def test_one_folder_set_through_the_helper_changes_that_folder_only(tree, monkeypatch):
    monkeypatch.setattr(acl, "install_helper", lambda t: False)
    monkeypatch.setattr(acl, "HELPER", program(acl_helper))
    got = acl.apply_one(LocalTransport(), str(tree), ["team"], _spec(special=0o2000))
    assert got["changed"] and got["before"] is None
    assert "group:users:rwx" in _getfacl(tree / "team") and "flags: -s-" in _getfacl(tree / "team")
    assert "users" not in _getfacl(tree / "team" / "a")
    again = acl.apply_one(LocalTransport(), str(tree), ["team"], _spec(special=0o2000))
    assert not again["changed"]


def test_a_walk_previews_then_applies_files_without_x_unless_they_had_it(tree):
    counted = _walk(tree, ["team"], _spec(), write=False)
    assert counted["folders"] == 3 and counted["files"] == 2 and counted["changed"] == 5
    assert "users" not in _getfacl(tree / "team")  # a preview writes nothing
    applied = _walk(tree, ["team"], _spec())
    assert applied["changed"] == 5 and applied["done"]
    assert "group:users:rw-" in _getfacl(tree / "team" / "doc.txt")
    assert "group:users:rwx" in _getfacl(tree / "team" / "run.sh")
    assert "default:group:users:rwx" in _getfacl(tree / "team" / "a" / "b")
    assert _walk(tree, ["team"], _spec(), write=False)["changed"] == 0
    status = json.loads((tree / ".status").read_text())
    assert status["done"] and status["files"] == 2


def test_a_walk_never_changes_what_a_link_or_a_hard_link_points_at(tree):
    before = _getfacl(tree / "outside" / "secret"), _getfacl(tree / "outside")
    (tree / "team" / "to-dir").symlink_to(tree / "outside")
    (tree / "team" / "to-file").symlink_to(tree / "outside" / "secret")
    os.link(tree / "outside" / "secret", tree / "team" / "a" / "hard")
    applied = _walk(tree, ["team"], _spec())
    assert applied["links"] == 2 and applied["hardlinked"] == 1
    assert (_getfacl(tree / "outside" / "secret"), _getfacl(tree / "outside")) == before


def test_a_folder_swapped_for_a_link_mid_walk_is_skipped(tree):
    before = _getfacl(tree / "outside")

    class Planting(acl_helper.Walk):
        def folder(self, fd):
            names = super().folder(fd)
            if "a" in names:  # listed as a folder; now a link to somewhere else
                (tree / "team" / "a").rename(tree / "team" / "a-moved")
                (tree / "team" / "a").symlink_to(tree / "outside")
            return names

    applied = _walk(tree, ["team"], _spec(), cls=Planting)
    assert applied["links"] == 1
    assert _getfacl(tree / "outside") == before


def test_a_walk_stays_on_its_filesystem(tree, root):
    mount = tree / "team" / "mounted"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tarn-test", str(mount)], check=True)
    try:
        (mount / "x").write_text("x")
        before = _getfacl(mount / "x")
        assert _walk(tree, ["team"], _spec())["other_datasets"] == 1
        assert _getfacl(mount / "x") == before
        assert acl.read(LocalTransport(), str(tree), ["team", "mounted"]).other_dataset
    finally:
        subprocess.run(["umount", str(mount)], check=True)


def _stopped_once_started(tmp_path: Path, source: str) -> dict:
    """The helper's apply of tmp_path/big as the unit runs it, sent SIGTERM as soon as its status appears: that
    status, once it has ended well (stopped, not done)."""
    status, args = tmp_path / "status.json", tmp_path / "walk.args"
    args.write_text(json.dumps({"root": str(tmp_path), "parts": ["big"], "spec": _spec()}))
    child = subprocess.Popen([sys.executable, "-c", source, "apply", str(args), str(status)])
    deadline = time.monotonic() + 30
    while not status.exists() and time.monotonic() < deadline:
        time.sleep(0.005)
    child.send_signal(signal.SIGTERM)
    assert child.wait(30) == 0
    said = json.loads(status.read_text())
    assert said["stopped"] and not said["done"]
    return said


def test_sigterm_stops_a_walk_between_two_files_and_says_so(tmp_path):
    big = tmp_path / "big"
    big.mkdir()
    for i in range(20_000):
        (big / f"f{i}").touch()
    said = _stopped_once_started(tmp_path, source_of(acl_helper))
    assert 0 < said["files"] < 20_000
    written = sum(acl_helper._xattr(str(p), acl_helper.ACCESS) is not None for p in big.iterdir())
    assert written == said["files"] == said["changed"] - 1  # the folder, then exactly the files it counted


def _many(top: Path, folders: int, files: int) -> None:
    for d in range(folders):
        (top / f"d{d}" / "inner").mkdir(parents=True)
        for i in range(files):
            (top / f"d{d}" / f"f{i}").touch()
        (top / f"d{d}" / "inner" / "deep").touch()


def test_workers_share_the_top_folders_and_count_what_one_process_counts(tree):
    """The top folder's subfolders dealt out to forked workers: the same counts (and the same ACLs written) as one
    process, links and hard links still skipped, the status the sum."""
    _many(tree / "team", 5, 40)
    (tree / "team" / "d3" / "to-out").symlink_to(tree / "outside")
    os.link(tree / "outside" / "secret", tree / "team" / "d4" / "hard")
    alone = acl_helper.Walk(acl_helper.Spec(_spec()), False, str(tree / ".one"), workers=1)
    alone.run(str(tree), ["team"])
    shared = acl_helper.Walk(acl_helper.Spec(_spec()), True, str(tree / ".status"), workers=3)
    shared.run(str(tree), ["team"])
    assert shared.counts == {**alone.counts} and shared.counts["files"] == 2 + 5 * 41 + 0
    assert shared.counts["folders"] == 1 + 1 + 1 + 5 * 2 and shared.counts["links"] == 1
    assert shared.counts["hardlinked"] == 1 and shared.counts["done"]
    assert json.loads((tree / ".status").read_text()) == shared.counts
    assert all("group:users:rw-" in _getfacl(tree / "team" / f"d{d}" / "inner" / "deep") for d in range(5))
    assert "users" not in _getfacl(tree / "outside" / "secret") and "users" not in _getfacl(tree / "outside")


def test_a_worker_killed_before_its_last_count_fails_the_walk(tree):
    """A worker that dies without its last report (the OOM killer, a crash) leaves part of the tree unwalked: the walk
    says so and fails, as one process's death would, instead of reading applied."""
    _many(tree / "team", 4, 5)

    class Dying(acl_helper.Walk):
        def _descend(self, top, dev, names):
            if self.pipe is not None and "d1" in list(names):
                os.kill(os.getpid(), signal.SIGKILL)
            return super()._descend(top, dev, names)

    walk = Dying(acl_helper.Spec(_spec()), True, str(tree / ".status"), workers=2)
    with pytest.raises(RuntimeError, match="a worker ended without its last count"):
        walk.run(str(tree), ["team"])


def test_a_fork_that_fails_midway_stops_and_reaps_the_workers_already_started(tree, monkeypatch):
    _many(tree / "team", 6, 200)
    forked, real = [], os.fork

    def fork():
        if forked:
            raise BlockingIOError(errno.EAGAIN, "Resource temporarily unavailable")
        forked.append(real())
        return forked[-1]

    monkeypatch.setattr(acl_helper.os, "fork", fork)
    walk = acl_helper.Walk(acl_helper.Spec(_spec()), True, str(tree / ".status"), workers=3)
    with pytest.raises(BlockingIOError):
        walk.run(str(tree), ["team"])
    with pytest.raises(ChildProcessError):
        os.waitpid(forked[0], os.WNOHANG)  # reaped already: nothing left walking
    assert walk.counts["folders"] >= 1 and walk.stop


def test_sigterm_stops_every_worker_and_the_status_counts_what_they_wrote(tmp_path):
    top = tmp_path / "big"
    _many(top, 4, 15_000)
    said = _stopped_once_started(tmp_path, source_of(acl_helper).replace("\nWORKERS = ", "\nWORKERS = 4 or ", 1))
    files = [p for d in top.iterdir() for p in d.rglob("*") if p.is_file()]
    written = sum(acl_helper._xattr(str(p), acl_helper.ACCESS) is not None for p in files)
    assert 0 < said["files"] < len(files) and written == said["files"], (written, said)
    left = subprocess.run(["pgrep", "-f", str(tmp_path / "walk.args")], capture_output=True).stdout
    assert not left, "no worker left behind"


def test_a_folder_that_cannot_be_changed_is_counted_and_what_is_inside_is_still_walked(tree):
    class Failing(acl_helper.Walk):
        def change_folder(self, fd):
            if self.counts["folders"] == 1:
                raise PermissionError("the top folder refuses")
            return super().change_folder(fd)

    counts = _walk(tree, ["team"], _spec(), cls=Failing)
    assert counts["failed"] == 1 and counts["folders"] == 3
    assert "group:users:rwx" in _getfacl(tree / "team" / "a" / "b")


def test_a_tree_deeper_than_the_limit_is_counted_not_walked(tree, monkeypatch):
    monkeypatch.setattr(acl_helper, "MAX_DEPTH", 3)
    deep = tree / "team" / "a" / "b"
    for n in range(6):
        deep = deep / f"d{n}"
    deep.mkdir(parents=True)
    counts = _walk(tree, ["team"], _spec())
    assert counts["too_deep"] == 1 and "users" not in _getfacl(deep)


def test_taking_acls_and_owners_away_is_counted_for_the_preview(tree):
    _walk(tree, ["team"], _spec())
    bare = acl.spec(acl.build(7, 5, 0, {}, {}), None, owner=65534)
    counts = _walk(tree, ["team"], bare, write=False)
    assert counts["acl_removed"] == 5 + 3  # five access ACLs and three folders' defaults
    assert counts["owner_changed"] == 5


def test_a_minimal_acl_is_a_chmod_where_the_filesystem_has_no_acls(tree, monkeypatch):
    calls = []
    monkeypatch.setattr(acl_helper.os, "setxattr", lambda *a, **k: calls.append(a))
    counts = _walk(tree, ["team"], acl.spec(acl.build(7, 5, 0, {}, {}), None))
    assert counts["changed"] and not calls
    assert oct((tree / "team" / "doc.txt").stat().st_mode & 0o777) == "0o640"


def test_a_walks_folder_and_acl_never_reach_the_units_command_line(monkeypatch):
    """systemd expands $ and % in a unit's command line: Bob${X} would walk Bob. Only Tarn's paths go there."""
    fake = FakeHost()
    t = fake.transport()
    acl.walk_start(t, 7, "apply", "/tank/share", ["Bob${X}", "100%n"], {"spec": _spec()})
    unit = next(c.argv for c in fake.calls if c.argv[0] == "systemd-run")
    assert not any("Bob" in a or "%n" in a for a in unit)
    assert unit[-3:] == ["apply", "/run/tarn/tarn-acl-7.args", "/run/tarn/tarn-acl-7.json"]
    assert "--property=DevicePolicy=closed" in unit
    assert json.loads(fake.files["/run/tarn/tarn-acl-7.args"])["parts"] == ["Bob${X}", "100%n"]


def test_one_folder_with_another_filesystem_mounted_on_it_is_refused(tree, monkeypatch, root):
    monkeypatch.setattr(acl, "install_helper", lambda t: False)
    monkeypatch.setattr(acl, "HELPER", program(acl_helper))
    mount = tree / "team" / "mounted"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tarn-test", str(mount)], check=True)
    try:
        with pytest.raises(PathNotAllowed, match="another filesystem"):
            acl.apply_one(LocalTransport(), str(tree), ["team", "mounted"], _spec())
    finally:
        subprocess.run(["umount", str(mount)], check=True)
