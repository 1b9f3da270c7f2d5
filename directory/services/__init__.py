"""The directory's writes, by noun: joins (join, leave a domain), ldap (set up, remove an LDAP directory), names (the
listing), checks (the health of either)."""

from directory.services.checks import ldap_check, member_check, member_check_start, members_check_due
from directory.services.joins import member_join_start, member_leave_start
from directory.services.ldap import ldap_configure_start, ldap_remove_start
from directory.services.names import ldap_names_refresh, names_refresh, names_refresh_start

__all__ = [
    "ldap_check",
    "ldap_configure_start",
    "ldap_names_refresh",
    "ldap_remove_start",
    "member_check",
    "member_check_start",
    "member_join_start",
    "member_leave_start",
    "members_check_due",
    "names_refresh",
    "names_refresh_start",
]
