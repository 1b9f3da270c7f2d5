"""The join's health, asked every few minutes of each joined host: a DC answers (and its clock), the machine account
works (net ads testjoin), winbind answers and holds its secure channel (wbinfo -p, -t), the machine password's last
change. The alerts (directory.alerts) and the page read what the last check stored; nothing here changes the host."""

from datetime import UTC, datetime, timedelta

from django.utils import timezone

from appliance.models import Operation
from appliance.operations import TargetBusy, Tracker, operation_runner, operation_start
from directory.choices import CHECK_MINUTES
from directory.models import DomainMember
from hostlib import directory
from hostlib.runner import Transport


def member_check(*, member: DomainMember, transport: Transport, now=None) -> DomainMember:
    """Ask the host and store what it said on the member's row."""
    from directory.services.joins import member_spec  # noqa: PLC0415 - joins imports this module

    said = []
    try:
        info = directory.ads_info(transport, member_spec(member))
    except directory.DirectoryError as exc:
        member.reachable, member.dc_name, member.clock_offset = False, "", None
        said.append(str(exc))
    else:
        member.reachable, member.dc_name, member.clock_offset = True, info.ldap_server_name, info.offset
        if info.password_changed:
            member.password_changed = datetime.fromtimestamp(info.password_changed, tz=UTC)
    member.testjoin_ok, words = directory.testjoin(transport)
    if not member.testjoin_ok:
        said.append(f"testjoin: {words}")
    member.winbind_ok, words = directory.winbind_answers(transport)
    if member.winbind_ok:
        member.trust_ok, words = directory.trust_ok(transport)
        if not member.trust_ok:
            said.append(f"secure channel: {words}")
    else:
        member.trust_ok = False
        said.append(f"winbind: {words}")
    member.said = "\n".join(said)[:2000]
    member.checked_at = now or timezone.now()
    member.save()
    return member


def member_check_start(*, host, user) -> Operation:
    return operation_start(kind="directory.check", host=host, user=user)


@operation_runner("directory.check", lock="directory-check", reads=True)
def member_check_run(tracker: Tracker) -> None:
    member = DomainMember.objects.filter(host=tracker.op.host).first()
    if member is None:
        tracker.progress(100, "Not in a domain: nothing to check.")
        return
    tracker.progress(10, f"Asking {member.realm}")
    member = member_check(member=member, transport=tracker.transport(read_only=True))
    tracker.progress(100, "The join is healthy." if member.healthy else f"Not healthy: {member.said[:300]}")


def members_check_due(*, now=None) -> int:
    """Queue a check of each joined host last checked CHECK_MINUTES ago or more (TargetBusy: one is waiting)."""
    now = now or timezone.now()
    started = 0
    for member in DomainMember.objects.select_related("host"):
        if member.checked_at and member.checked_at > now - timedelta(minutes=CHECK_MINUTES):
            continue
        try:
            operation_start(kind="directory.check", host=member.host, user=None)
            started += 1
        except TargetBusy:
            continue
    return started
