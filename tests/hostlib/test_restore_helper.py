"""The restore helper on a folder tree made here, laid out as a dataset's mount (.zfs/snapshot/<name> a plain folder:
no ZFS here; the lab restores from real snapshots, tests/lab/test_recovery.py): a file and a folder back in place and
beside, owner, mode, times and xattrs kept, links copied as links, a link planted where the restore lands refused, a
stop leaving the original, and no space left leaving the original."""

import errno
import json
import os
import stat
import subprocess
import sys

import pytest

from hostlib import restore_helper
from tests.support.runners import program

HELPER = program(restore_helper)


@pytest.fixture
def mount(tmp_path):
    root = tmp_path / "docs"
    old = root / ".zfs" / "snapshot" / "mon"
    (old / "team" / "deep").mkdir(parents=True)
    (old / "team" / "report.txt").write_text("monday's report")
    (old / "team" / "deep" / "notes.txt").write_text("monday's notes")
    os.symlink("report.txt", old / "team" / "latest")
    os.chown(old / "team" / "report.txt", 1234, 2345)
    os.chmod(old / "team" / "report.txt", 0o640)
    os.setxattr(old / "team" / "report.txt", "user.tag", b"kept")
    os.utime(old / "team" / "report.txt", ns=(1_600_000_000_000_000_000, 1_600_000_000_000_000_000))
    (root / "team").mkdir(parents=True)
    (root / "team" / "report.txt").write_text("overwritten by mistake")
    (root / "team" / "today.txt").write_text("made after the snapshot")
    return root


def run(tmp_path, mount, parts, how="place", name=None, job=7):
    args = tmp_path / f"args-{job}.json"
    args.write_text(json.dumps({"mount": str(mount), "snapshot": "mon", "parts": [p.encode().hex() for p in parts],
                                "how": how, "name": name.encode().hex() if name else "", "job": job}))  # fmt: skip
    args.chmod(0o600)
    status = tmp_path / f"status-{job}.json"
    done = subprocess.run([sys.executable, HELPER, "restore", str(args), str(status)], capture_output=True, text=True,
                          timeout=60)  # fmt: skip
    return done, json.loads(status.read_text()) if status.exists() else {}


def test_a_file_comes_back_in_place_with_its_owner_mode_times_and_xattrs(tmp_path, mount):
    done, status = run(tmp_path, mount, ["team", "report.txt"])
    assert done.returncode == 0, done.stderr
    back = mount / "team" / "report.txt"
    st = back.stat()
    assert back.read_text() == "monday's report" and (st.st_uid, st.st_gid) == (1234, 2345)
    assert stat.S_IMODE(st.st_mode) == 0o640 and st.st_mtime_ns == 1_600_000_000_000_000_000
    assert os.getxattr(back, "user.tag") == b"kept"
    assert status["state"] == "done" and status["bytes"] == status["total"] == 15 and status["files"] == 1
    assert sorted(os.listdir(mount / "team")) == ["report.txt", "today.txt"], "no temporary copy left"
    assert not (tmp_path / "args-7.json").exists(), "its arguments read once and removed"


def test_a_folder_comes_back_in_place_whole_and_beside_under_a_new_name(tmp_path, mount):
    done, status = run(tmp_path, mount, ["team"], how="beside", name="team.restored-mon", job=1)
    assert done.returncode == 0, done.stderr
    beside = mount / "team.restored-mon"
    assert (beside / "deep" / "notes.txt").read_text() == "monday's notes"
    assert os.readlink(beside / "latest") == "report.txt" and status["links"] == 1 and status["folders"] == 2
    assert (mount / "team" / "today.txt").exists(), "beside: the live folder untouched"
    done, _ = run(tmp_path, mount, ["team"], job=2)
    assert done.returncode == 0, done.stderr
    assert sorted(os.listdir(mount / "team")) == ["deep", "latest", "report.txt"], "in place: the folder as it was"
    assert sorted(os.listdir(mount)) == [".zfs", "team", "team.restored-mon"], "the old one removed, nothing left"
    again, _ = run(tmp_path, mount, ["team"], how="beside", name="team.restored-mon", job=3)
    assert again.returncode == restore_helper.REFUSED and "exists already" in again.stderr


def test_a_link_planted_where_the_file_lands_is_refused_and_nothing_is_written_through_it(tmp_path, mount):
    target = tmp_path / "outside.txt"
    target.write_text("not Tarn's to write")
    (mount / "team" / "report.txt").unlink()
    os.symlink(target, mount / "team" / "report.txt")
    done, status = run(tmp_path, mount, ["team", "report.txt"])
    assert done.returncode == restore_helper.REFUSED and "is a link now" in done.stderr
    assert target.read_text() == "not Tarn's to write" and status["state"] == "failed"
    (mount / "team").rename(mount / "team-real")
    os.symlink(mount / "team-real", mount / "team")
    done, _ = run(tmp_path, mount, ["team", "report.txt"], job=8)
    assert done.returncode == restore_helper.REFUSED and "team is a link or not a folder" in done.stderr


def test_a_stop_or_no_space_leaves_the_original_and_no_half_copy(tmp_path, mount, monkeypatch):
    folder = mount / ".zfs/snapshot/mon/team"
    (folder / "big.bin").write_bytes(os.urandom(1 << 20))
    args = {"mount": str(mount), "snapshot": "mon", "parts": [b"team".hex()], "how": "place", "name": "", "job": 5}
    (tmp_path / "switch").write_text("1\n")  # a pool that clones: the data goes by copy_file_range
    monkeypatch.setattr(restore_helper, "BCLONE", str(tmp_path / "switch"))
    calls = {"n": 0}
    real = os.copy_file_range

    def full(src, dst, count, *rest):
        calls["n"] += 1
        if calls["n"] > 1:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(src, dst, count, *rest)

    monkeypatch.setattr(os, "copy_file_range", full)
    with pytest.raises(restore_helper.Failed, match="no space left"):
        restore_helper.restore(args, str(tmp_path / "status-5.json"))
    assert (mount / "team" / "report.txt").read_text() == "overwritten by mistake", "the original as it was"
    assert sorted(os.listdir(mount / "team")) == ["report.txt", "today.txt"], "the half copy removed"
    status = json.loads((tmp_path / "status-5.json").read_text())
    assert status["state"] == "failed" and status["error"] == "no space left on the pool"

    monkeypatch.setattr(os, "copy_file_range", real)
    monkeypatch.setattr(restore_helper.Copy, "check", lambda self: (_ for _ in ()).throw(restore_helper.Stopped()))
    restore_helper.restore({**args, "job": 6}, str(tmp_path / "status-6.json"))
    assert json.loads((tmp_path / "status-6.json").read_text())["state"] == "stopped"
    assert sorted(os.listdir(mount / "team")) == ["report.txt", "today.txt"]


def test_arguments_in_a_file_anyone_could_write_are_refused(tmp_path, mount):
    args = tmp_path / "args.json"
    args.write_text("{}")
    args.chmod(0o666)
    done = subprocess.run([sys.executable, HELPER, "restore", str(args), str(tmp_path / "s.json")],
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == restore_helper.REFUSED and "not root's own file" in done.stderr


def test_a_folder_planted_under_the_old_temporary_name_is_never_removed(tmp_path, mount):
    """A user in a shared folder renames someone else's folder to the name the copy would use (job ids are
    sequential): the copy goes into a private folder of root's with a random name instead, and the planted one
    stays whole."""
    victim = mount / "team" / ".tarn-restore-7"
    victim.mkdir()
    (victim / "data").write_text("someone else's")
    done, status = run(tmp_path, mount, ["team", "report.txt"], how="beside", name="report.txt.restored-mon", job=7)
    assert done.returncode == 0 and status["state"] == "done", done.stderr
    assert (victim / "data").read_text() == "someone else's"
    assert sorted(os.listdir(mount / "team")) == [".tarn-restore-7", "report.txt", "report.txt.restored-mon",
                                                  "today.txt"], "nothing else left behind"  # fmt: skip


def test_a_folder_with_a_filesystem_mounted_inside_is_not_replaced(tmp_path, mount):
    """Its contents would be removed with the old folder (the safety snapshot holds only the dataset's own)."""
    inside = mount / "team" / "sub"
    inside.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "tmpfs", str(inside)], check=True)
    try:
        (inside / "kept.txt").write_text("another filesystem's")
        done, status = run(tmp_path, mount, ["team"], job=9)
        assert done.returncode == restore_helper.REFUSED and "is mounted inside team" in done.stderr
        assert (inside / "kept.txt").read_text() == "another filesystem's" and status["state"] == "failed"
        assert (mount / "team" / "today.txt").exists(), "the live folder as it was"
    finally:
        subprocess.run(["umount", str(inside)], check=True)


def test_a_name_that_is_not_text_is_restored_byte_for_byte(tmp_path, mount):
    odd = b"line\nbreak\xff"
    with open(os.path.join(os.fsencode(mount / ".zfs/snapshot/mon/team"), odd), "wb") as fh:
        fh.write(b"odd")
    args = {"mount": str(mount), "snapshot": "mon", "parts": [b"team".hex(), odd.hex()], "how": "beside",
            "name": (odd + b".restored-mon").hex(), "job": 11}  # fmt: skip
    restore_helper.restore(args, str(tmp_path / "status-11.json"))
    back = os.path.join(os.fsencode(mount / "team"), odd + b".restored-mon")
    assert open(back, "rb").read() == b"odd"


def test_where_copy_file_range_is_refused_the_rest_is_copied_through_a_buffer(tmp_path, mount, monkeypatch):
    payload = os.urandom(3 << 20)
    (mount / ".zfs/snapshot/mon/team/big.bin").write_bytes(payload)

    def refused(*args):
        raise OSError(errno.EXDEV, "Invalid cross-device link")

    written = []
    real = os.write
    (tmp_path / "switch").write_text("1\n")  # the pool says it clones; copy_file_range says no
    monkeypatch.setattr(restore_helper, "BCLONE", str(tmp_path / "switch"))
    monkeypatch.setattr(os, "copy_file_range", lambda *a: written.append("asked") or refused())
    monkeypatch.setattr(os, "write", lambda fd, data: written.append(len(data)) or real(fd, data))
    args = {"mount": str(mount), "snapshot": "mon", "parts": [b"team".hex(), b"big.bin".hex()], "how": "beside",
            "name": b"big.bin.restored-mon".hex(), "job": 12}  # fmt: skip
    restore_helper.restore(args, str(tmp_path / "status-12.json"))
    assert (mount / "team" / "big.bin.restored-mon").read_bytes() == payload
    assert written[0] == "asked" and written[1:].count(restore_helper.BLOCK) == 3, "then copied a block at a time"


def test_a_pool_that_does_not_clone_is_never_asked_to_and_its_copy_is_whole(tmp_path, mount, monkeypatch):
    payload = os.urandom((5 << 20) + 123)  # blocks and a part of one
    (mount / ".zfs/snapshot/mon/team/big.bin").write_bytes(payload)
    (mount / ".zfs/snapshot/mon/team/sparse.bin").touch()
    os.truncate(mount / ".zfs/snapshot/mon/team/sparse.bin", 3 << 20)  # a hole: read back as zeros
    asked = []
    monkeypatch.setattr(os, "copy_file_range", lambda *a: asked.append(a))
    switch = tmp_path / "zfs_bclone_enabled"
    monkeypatch.setattr(restore_helper, "BCLONE", str(switch))
    args = {"mount": str(mount), "snapshot": "mon", "parts": [b"team".hex()], "how": "beside",
            "name": b"team.restored-mon".hex(), "job": 13, "cloning": False}  # fmt: skip
    assert not restore_helper.cloning(args)  # the pool lacks the feature (Tarn asked zpool)
    switch.write_text("0\n")
    assert not restore_helper.cloning({**args, "cloning": True})  # the module has cloning off
    switch.write_text("1\n")
    assert restore_helper.cloning({**args, "cloning": True}) and restore_helper.cloning({})  # older Tarn: try
    monkeypatch.setattr(restore_helper, "BCLONE", str(tmp_path / "no-such-switch"))
    assert not restore_helper.cloning({**args, "cloning": True})  # OpenZFS 2.2.0/2.2.1: a plain copy
    copy = restore_helper.restore(args, str(tmp_path / "status-13.json"))
    back = mount / "team.restored-mon"
    assert (back / "big.bin").read_bytes() == payload and (back / "sparse.bin").read_bytes() == bytes(3 << 20)
    assert os.stat(back / "sparse.bin").st_blocks == 0, "its hole stays a hole"
    assert (back / "report.txt").read_text() == "monday's report" and not asked
    assert copy.bytes == len(payload) + (3 << 20) + len("monday's report") + len("monday's notes")
    status = json.loads((tmp_path / "status-13.json").read_text())
    assert status["state"] == "done" and status["bytes"] == copy.bytes


def test_no_space_in_a_plain_copy_leaves_the_original_and_no_half_copy(tmp_path, mount, monkeypatch):
    (mount / ".zfs/snapshot/mon/team/big.bin").write_bytes(os.urandom(3 << 20))
    real, calls = os.write, {"n": 0}

    def full(fd, data):
        calls["n"] += 1
        if calls["n"] > 2:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(fd, data)

    monkeypatch.setattr(os, "write", full)
    args = {"mount": str(mount), "snapshot": "mon", "parts": [b"team".hex()], "how": "place", "name": "", "job": 14,
            "cloning": False}  # fmt: skip
    with pytest.raises(restore_helper.Failed, match="no space left"):
        restore_helper.restore(args, str(tmp_path / "status-14.json"))
    monkeypatch.setattr(os, "write", real)
    assert (mount / "team" / "report.txt").read_text() == "overwritten by mistake", "the original as it was"
    assert sorted(os.listdir(mount / "team")) == ["report.txt", "today.txt"], "the half copy removed"


def test_a_sparse_file_copied_plainly_keeps_its_data_where_it_was_and_its_holes(tmp_path, mount):
    sparse = mount / ".zfs/snapshot/mon/team/image.raw"
    with open(sparse, "wb") as fh:  # data, a 4 MiB hole, data, then a hole to the end
        fh.write(b"a" * 5000)
        fh.seek(5000 + (4 << 20))
        fh.write(b"b" * (3 << 20))
        fh.truncate(16 << 20)
    args = {"mount": str(mount), "snapshot": "mon", "parts": [b"team".hex(), b"image.raw".hex()], "how": "beside",
            "name": b"image.raw.restored-mon".hex(), "job": 15, "cloning": False}  # fmt: skip
    copy = restore_helper.restore(args, str(tmp_path / "status-15.json"))
    back = mount / "team" / "image.raw.restored-mon"
    assert back.read_bytes() == sparse.read_bytes() and back.stat().st_size == 16 << 20
    assert back.stat().st_blocks * 512 < 4 << 20, "the holes were not written"
    assert copy.bytes == 16 << 20  # the holes count as done: the progress reaches the whole


def test_a_file_shorter_than_its_stat_is_not_restored_as_whole(tmp_path, mount, monkeypatch):
    real = os.readv
    monkeypatch.setattr(os, "readv", lambda fd, buffers: 0)  # as a file that ended early
    (mount / ".zfs/snapshot/mon/team/big.bin").write_bytes(os.urandom(3 << 20))
    args = {"mount": str(mount), "snapshot": "mon", "parts": [b"team".hex(), b"big.bin".hex()], "how": "beside",
            "name": b"big.bin.restored-mon".hex(), "job": 16, "cloning": False}  # fmt: skip
    with pytest.raises(restore_helper.Failed, match="changed size while it was copied"):
        restore_helper.restore(args, str(tmp_path / "status-16.json"))
    monkeypatch.setattr(os, "readv", real)
    assert sorted(os.listdir(mount / "team")) == ["report.txt", "today.txt"], "nothing half copied is left"
