"""The directory's writes, by noun: joins (join, leave), names (the listing), checks (the join's health)."""

from directory.services.checks import member_check, member_check_start, members_check_due
from directory.services.joins import member_join_start, member_leave_start, member_spec
from directory.services.names import names_refresh, names_refresh_start

__all__ = [
    "member_check",
    "member_check_start",
    "member_join_start",
    "member_leave_start",
    "member_spec",
    "members_check_due",
    "names_refresh",
    "names_refresh_start",
]
