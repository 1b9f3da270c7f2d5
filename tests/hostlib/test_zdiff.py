"""zfs diff -FHt's lines parsed (the format libzfs_diff.c prints: a ctime, the change, the type, the escaped path, a
rename's new path, a link count's change), and the snapshot reader's page of them under a folder, counted, read as
they come. The fixture follows that format line for line (tests/lab/test_recovery.py parses the real output)."""

import io
import subprocess
from pathlib import Path

import pytest

from hostlib import names, snap_helper, zdiff

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "host" / "recovery" / "zfs-diff-FHt.txt"


def test_every_kind_of_line_is_parsed_and_escaped_names_come_back_byte_for_byte():
    found = zdiff.parse(FIXTURE.read_text())
    assert len(found) == 12
    assert (found[0].change, found[0].type, found[0].path) == ("modified", "dir", b"/tank/docs/team")
    assert found[3].change == "renamed" and found[3].new_path == b"/tank/docs/team/b.txt"
    assert found[5].path == b"/tank/docs/team/line\nbreak and\ttab" and found[6].path == b"/tank/docs/team/latin-\xe9"
    assert found[7].links == 1 and found[7].new_path is None
    assert found[9].type == "link" and found[0].at == pytest.approx(1764500000.123456789)


def test_lines_that_are_not_changes_are_left_out():
    assert zdiff.parse("zfs diff: warning\n\n12\t?\tF\t/x\n1.5\t+\tF\t/tank/a\n") == [
        zdiff.Change(1.5, "added", "file", b"/tank/a")
    ]


def test_the_argv_compares_two_snapshots_of_one_dataset_or_one_and_now():
    assert zdiff.diff_argv("tank/docs@a", "tank/docs@b") == ["zfs", "diff", "-F", "-H", "-t", "--", "tank/docs@a",
                                                             "tank/docs@b"]  # fmt: skip
    assert zdiff.diff_argv("tank/docs@a")[-1] == "tank/docs"
    for since, to in (("tank/docs@a", "tank/other@b"), ("-rf", ""), ("tank/docs", "")):
        with pytest.raises(names.InvalidName):
            zdiff.diff_argv(since, to)


class FakeDiff:
    """What Popen gives for `zfs diff`: the fixture's bytes on stdout."""

    def __init__(self, argv, **kwargs):
        self.argv, self.returncode = argv, 0
        self.stdout = io.BytesIO(FIXTURE.read_bytes())

    def wait(self):  # a zfs diff that is still tidying up when its output ends (a "now" snapshot to destroy)
        self.waited = True
        return 0

    def kill(self):
        raise AssertionError("a zfs diff that ended on its own is waited for, never killed")


def test_the_reader_keeps_one_page_under_a_folder_and_counts_every_change_there(monkeypatch, tmp_path):
    monkeypatch.setattr(subprocess, "Popen", FakeDiff)  # the reader imports subprocess when it diffs
    monkeypatch.setattr(snap_helper, "LOCK_DIR", str(tmp_path / "locks"))
    request = {"argv": zdiff.diff_argv("tank/docs@a"), "mount": "/tank/docs", "prefix": b"team/".hex(),
               "offset": 1, "limit": 3}  # fmt: skip
    found = snap_helper.diff(request)
    assert found["total"] == 12 and found["matched"] == 10, "other/link and other/ are not under team/"
    assert found["counts"] == {"M": 3, "+": 4, "-": 1, "R": 2}
    assert [line.split("\t")[3] for line in found["lines"]] == [
        "/tank/docs/team/new.txt", "/tank/docs/team/old.txt", "/tank/docs/team/a.txt"
    ]  # fmt: skip
    with pytest.raises(snap_helper.Refused):
        snap_helper.diff({**request, "argv": ["rm", "-rf", "/"]})
