"""hostlib.quotas: the listings as OpenZFS 2.3 prints them in the lab (tests/fixtures/host/permissions, captured by
tests/support/capture_permissions.py), hostile lines left out, quota values read with the same rules as every size,
and the argv that sets them (by id)."""

from pathlib import Path

import pytest

from hostlib import quotas
from hostlib.quotas import InvalidQuota, Use

CAPTURED = Path(__file__).resolve().parent.parent / "fixtures" / "host" / "permissions"


def captured(name: str) -> str:
    return (CAPTURED / name).read_text()


def test_the_listings_read_as_the_lab_printed_them():
    users, left = quotas.parse_space("user", captured("userspace.txt"))
    assert left == 0
    assert Use("user", "carol", 1024, 10 << 20, 2, 100) in users
    assert Use("user", "root", 1536, None, 3, None) in users  # -p prints no quota as 0
    groups, _ = quotas.parse_space("group", captured("groupspace.txt"))
    assert Use("group", "officers", 1024, 50 << 20, 2, None) in groups
    projects, _ = quotas.parse_space("project", captured("projectspace.txt"))
    assert Use("project", "42", 1024, 20 << 20, 2, None) in projects
    assert next(p for p in projects if p.name == "42").percent == pytest.approx(100 * 1024 / (20 << 20))


@pytest.mark.parametrize(
    "line",
    [
        "POSIX User\tev\til\t1\t0\t1\t0",  # a tab in a name: six fields no more
        "POSIX User\tbell\x07\t1\t0\t1\t0",
        "POSIX User\t-rf\t1\t0\t1\t0",
        "POSIX User\tcarol\tmany\t0\t1\t0",
        "POSIX Group\tofficers\t1\t0\t1\t0",  # another kind's line in a user listing
        "SMB User\tS-1-5-21-1\t1\t0\t1\t0",
        "",
    ],
)
def test_lines_a_hostile_or_odd_host_prints_are_left_out(line):
    rows, left = quotas.parse_space("user", "POSIX User\tcarol\t1024\t0\t2\t0\n" + line + "\n")
    assert [r.name for r in rows] == ["carol"]
    assert left == (1 if line else 0)


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ("0", "0 is no quota"),
        ("-1G", "A size"),
        ("1.5T", "A size"),  # the same rules as every other size: no fractions
        ("１５００", "A size"),  # fullwidth digits
        (str(1 << 64), "At most 8E"),
        ("16E", "A size"),
        ("10Q", "A size"),
    ],
)
def test_bad_quota_values_are_refused_naming_the_field(value, said):
    with pytest.raises(InvalidQuota) as refused:
        quotas.quota_value(value, "quota")
    assert said in refused.value.problems["quota"]


def test_good_quota_values_and_none():
    assert quotas.quota_value("50G") == 50 << 30
    assert quotas.quota_value("1024") == 1024
    assert quotas.quota_value("") is None and quotas.quota_value("none") is None
    assert quotas.object_quota("100") == 100 and quotas.object_quota("") is None
    with pytest.raises(InvalidQuota):
        quotas.object_quota("0")
    with pytest.raises(InvalidQuota):
        quotas.project_id(str(1 << 32))


def test_quotas_are_set_by_id_never_by_a_name():
    argv = quotas.set_argv("user", "tank/office", 3001, 10 << 20, None)
    assert argv == ["zfs", "set", "userquota@3001=10485760", "userobjquota@3001=none", "--", "tank/office"]
    assert quotas.set_argv("project", "tank/office", 42, None, None)[2:4] == [
        "projectquota@42=none",
        "projectobjquota@42=none",
    ]
    with pytest.raises(InvalidQuota):
        quotas.set_argv("user", "tank/office", "carol", 1, None)


def test_the_listings_argv_are_exact():
    assert quotas.space_argv("group", "tank/office") == [
        "zfs",
        "groupspace",
        "-H",
        "-p",
        "-o",
        "type,name,used,quota,objused,objquota",
        "-t",
        "posixgroup",
        "--",
        "tank/office",
    ]
    assert (
        quotas.space_argv("project", "tank/office")[-4:]
        == ["-o", "name,used,quota,objused,objquota", "--", "tank/office"][-4:]
    )
