"""write_file's group: a file a daemon reads as its group (NUT's upsd as nut), written atomically with that group,
in place where it differs; an unknown group refused before anything is written; a malformed one never reaches the
host."""

import grp
import os
import subprocess

import pytest

from hostlib import atomic
from hostlib.errors import PathNotAllowed
from hostlib.runner import LocalTransport


@pytest.fixture
def group():
    """A group other than root's that this machine has (the tests run as root)."""
    for name in ("nogroup", "daemon", "users"):
        try:
            return name, grp.getgrnam(name).gr_gid
        except KeyError:
            continue
    pytest.fail("no group to give a file")


def test_a_file_is_written_with_its_group_and_mode(tmp_path, group):
    name, gid = group
    path = tmp_path / "ups.conf"
    assert atomic.write_if_changed(str(path), b"[ups]\n", 0o640, [str(tmp_path)], name) is True
    st = path.stat()
    assert (st.st_gid, st.st_mode & 0o7777, path.read_bytes()) == (gid, 0o640, b"[ups]\n")
    assert atomic.write_if_changed(str(path), b"[ups]\n", 0o640, [str(tmp_path)], name) is False
    os.chown(path, -1, 0)  # the same bytes, the group lost: written again
    assert atomic.write_if_changed(str(path), b"[ups]\n", 0o640, [str(tmp_path)], name) is True
    assert path.stat().st_gid == gid


def test_through_the_program_a_host_runs(tmp_path, group):
    name, gid = group
    path = tmp_path / "upsd.users"
    done = subprocess.run(["python3", "-I", "-S", "-c", open(atomic.__file__).read(), str(path), f"640:{name}",
                           str(tmp_path)], input=b"x\n", capture_output=True, timeout=60)  # fmt: skip
    assert done.returncode == 0 and done.stdout.strip() == b"changed", done.stderr
    assert path.stat().st_gid == gid


def test_an_unknown_or_malformed_group_is_refused_and_nothing_is_written(tmp_path):
    t = LocalTransport(writable_dirs=(str(tmp_path),))
    with pytest.raises(PathNotAllowed):
        t.write_file(str(tmp_path / "a"), "x", mode=0o640, group="no-such-group-here")
    with pytest.raises(PathNotAllowed):
        t.write_file(str(tmp_path / "b"), "x", mode=0o640, group="nut; rm -rf /")
    assert list(tmp_path.iterdir()) == []
