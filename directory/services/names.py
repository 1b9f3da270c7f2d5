"""The domain's users and groups as winbind lists them, kept as rows the pages page through (a domain of 10,000
users is one `wbinfo -u`, not 10,000 questions); refreshed after a join and on demand."""

import time

from django.db import transaction
from django.utils import timezone

from appliance.models import Operation
from appliance.operations import Tracker, operation_runner, operation_start
from directory.choices import NameKind
from directory.models import DirectoryName, DomainMember
from hostlib import directory
from hostlib.runner import Transport

BATCH = 2000


def _replace(member: DomainMember, kind: str, names: list[str]) -> None:
    """The rows of one kind made equal to names: the gone deleted, the new added, the rest left (ids stay)."""
    rows = DirectoryName.objects.filter(host=member.host, kind=kind)
    have = set(rows.values_list("name", flat=True))
    fresh = set(names)
    gone = have - fresh
    if gone:
        for i in range(0, len(gone), BATCH):
            rows.filter(name__in=list(gone)[i : i + BATCH]).delete()
    DirectoryName.objects.bulk_create(
        [DirectoryName(host=member.host, kind=kind, name=n) for n in sorted(fresh - have)], batch_size=BATCH
    )


def names_refresh(*, member: DomainMember, transport: Transport) -> tuple[int, int]:
    """List the domain's users and groups now (winbind) into the rows: (users, groups)."""
    started = time.monotonic()
    users, left_users = directory.domain_names(transport, member.workgroup)
    groups, left_groups = directory.domain_names(transport, member.workgroup, groups=True)
    with transaction.atomic():
        _replace(member, NameKind.USER, users)
        _replace(member, NameKind.GROUP, groups)
        DomainMember.objects.filter(pk=member.pk).update(
            names_refreshed_at=timezone.now(),
            names_seconds=round(time.monotonic() - started, 3),
            names_left_out=left_users + left_groups,
        )
    return len(users), len(groups)


def names_refresh_start(*, host, user) -> Operation:
    return operation_start(kind="directory.names_refresh", host=host, user=user)


@operation_runner("directory.names_refresh", lock="directory-names", queue="host", reads=True)
def names_refresh_run(tracker: Tracker) -> None:
    member = DomainMember.objects.filter(host=tracker.op.host).first()
    if member is None:
        tracker.progress(100, "Not in a domain: nothing to list.")
        return
    tracker.progress(10, f"Listing {member.workgroup}'s users and groups (winbind)")
    users, groups = names_refresh(member=member, transport=tracker.transport())
    tracker.progress(100, f"{users} users and {groups} groups of {member.workgroup}")
