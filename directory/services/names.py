"""The directory's users and groups as winbind (a domain) or ldapsearch (an LDAP directory) lists them, kept as rows
the pages page through (a domain of 10,000 users is one `wbinfo -u`, not 10,000 questions); refreshed after a join or
a set-up and on demand."""

import time

from django.db import transaction
from django.utils import timezone

from appliance.choices import AccountKind
from appliance.models import Operation
from appliance.operations import Tracker, operation_runner, operation_start
from directory.models import DirectoryName, DomainMember, LdapDirectory
from hostlib import directory, sssd
from hostlib.runner import Transport

BATCH = 2000


def _replace(host, kind: str, names: list[str]) -> None:
    """The rows of one kind made equal to names: the gone deleted, the new added, the rest left (ids stay)."""
    rows = DirectoryName.objects.filter(host=host, kind=kind)
    have = set(rows.values_list("name", flat=True))
    fresh = set(names)
    gone = have - fresh
    if gone:
        for i in range(0, len(gone), BATCH):
            rows.filter(name__in=list(gone)[i : i + BATCH]).delete()
    DirectoryName.objects.bulk_create(
        [DirectoryName(host=host, kind=kind, name=n) for n in sorted(fresh - have)], batch_size=BATCH
    )


def names_store(source: DomainMember | LdapDirectory, users, groups, left_out: int, seconds: float = 0.0) -> None:
    """The listed names into the rows, and when and how long on the directory's own row."""
    with transaction.atomic():
        _replace(source.host, AccountKind.USER, users)
        _replace(source.host, AccountKind.GROUP, groups)
        type(source).objects.filter(pk=source.pk).update(
            names_refreshed_at=timezone.now(), names_seconds=round(seconds, 3), names_left_out=left_out
        )


def names_refresh(*, member: DomainMember, transport: Transport) -> tuple[int, int]:
    """List the domain's users and groups now (winbind) into the rows: (users, groups)."""
    started = time.monotonic()
    users, groups, left_out = directory.domain_accounts(transport, member.workgroup)
    names_store(member, users, groups, left_out, time.monotonic() - started)
    return len(users), len(groups)


def ldap_names_refresh(*, row: LdapDirectory, transport: Transport) -> tuple[int, int]:
    """List the LDAP directory's posix users and groups now (ldapsearch on the host, paged) into the rows."""
    started = time.monotonic()
    users, left_users = sssd.search_names(transport, row.spec)
    groups, left_groups = sssd.search_names(transport, row.spec, groups=True)
    names_store(row, users, groups, left_users + left_groups, time.monotonic() - started)
    return len(users), len(groups)


def names_refresh_start(*, host, user) -> Operation:
    return operation_start(kind="directory.names_refresh", host=host, user=user)


@operation_runner("directory.names_refresh", lock="directory-names", queue="host", reads=True)
def names_refresh_run(tracker: Tracker) -> None:
    member = DomainMember.objects.filter(host=tracker.op.host).first()
    ldap = LdapDirectory.objects.filter(host=tracker.op.host).first()
    if member is not None:
        tracker.progress(10, f"Listing {member.workgroup}'s users and groups (winbind)")
        users, groups = names_refresh(member=member, transport=tracker.transport())
        tracker.progress(100, f"{users} users and {groups} groups of {member.workgroup}")
    elif ldap is not None:
        tracker.progress(10, f"Listing {ldap.uri}'s users and groups (ldapsearch)")
        users, groups = ldap_names_refresh(row=ldap, transport=tracker.transport())
        tracker.progress(100, f"{users} users and {groups} groups of {ldap.uri}")
    else:
        tracker.progress(100, "No domain or LDAP directory: nothing to list.")
