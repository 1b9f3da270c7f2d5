"""The join's health, asked every few minutes of each joined host: a DC answers (and its clock), the machine account
works (net ads testjoin), winbind answers and holds its secure channel (wbinfo -p, -t), the machine password's last
change; of an LDAP directory's host: the server answers over TLS, sssd answers. The alerts
(directory.alerts) and the page read what the last check stored; nothing here changes the host."""

from datetime import UTC, datetime, timedelta

from django.utils import timezone

from appliance.choices import AccountKind
from appliance.models import Operation
from appliance.operations import TargetBusy, Tracker, operation_runner, operation_start
from directory.choices import CHECK_MINUTES
from directory.models import DirectoryName, DomainMember, LdapDirectory
from hostlib import directory, sssd
from hostlib.runner import Transport

# What a check writes (only these: a listing stored meanwhile on the same row stays).
CHECKED = ("checked_at", "reachable", "said")


def member_check(*, member: DomainMember, transport: Transport, now=None) -> DomainMember:
    """Ask the host and store what it said on the member's row."""
    said = []
    try:
        info = directory.ads_info(transport, member.spec)
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
    member.save(
        update_fields=[*CHECKED, "dc_name", "clock_offset", "password_changed", "testjoin_ok", "trust_ok", "winbind_ok"]
    )
    return member


def ldap_check(*, row: LdapDirectory, transport: Transport, now=None) -> LdapDirectory:
    """Ask the host: the server answers over TLS (with the bind file), sssd runs and answers for a user of the
    directory. Stored on the row."""
    said = []
    row.reachable, words = sssd.reachable(transport, row.spec)
    if not row.reachable:
        said.append(f"LDAP: {words}")
    known = DirectoryName.objects.filter(host=row.host, kind=AccountKind.USER).values_list("name", flat=True).first()
    row.sssd_ok, words = sssd.sssd_answers(transport, known or "")
    if not row.sssd_ok:
        said.append(f"sssd: {words}")
    row.said = "\n".join(said)[:2000]
    row.checked_at = now or timezone.now()
    row.save(update_fields=[*CHECKED, "sssd_ok"])
    return row


def member_check_start(*, host, user) -> Operation:
    return operation_start(kind="directory.check", host=host, user=user)


@operation_runner("directory.check", lock="directory-check", reads=True)
def member_check_run(tracker: Tracker) -> None:
    member = DomainMember.objects.filter(host=tracker.op.host).first()
    ldap = LdapDirectory.objects.filter(host=tracker.op.host).first()
    if ldap is not None:
        tracker.progress(10, f"Asking {ldap.uri}")
        ldap = ldap_check(row=ldap, transport=tracker.transport(read_only=True))
        tracker.progress(100, "The directory is healthy." if ldap.healthy else f"Not healthy: {ldap.said[:300]}")
        return
    if member is None:
        tracker.progress(100, "No domain or LDAP directory: nothing to check.")
        return
    tracker.progress(10, f"Asking {member.realm}")
    member = member_check(member=member, transport=tracker.transport(read_only=True))
    tracker.progress(100, "The join is healthy." if member.healthy else f"Not healthy: {member.said[:300]}")


def members_check_due(*, now=None) -> int:
    """Queue a check of each joined host (or reading an LDAP directory) last checked CHECK_MINUTES ago or more
    (TargetBusy: one is waiting)."""
    now = now or timezone.now()
    started = 0
    rows = [*DomainMember.objects.select_related("host"), *LdapDirectory.objects.select_related("host")]
    for row in rows:
        if row.checked_at and row.checked_at > now - timedelta(minutes=CHECK_MINUTES):
            continue
        try:
            operation_start(kind="directory.check", host=row.host, user=None)
            started += 1
        except TargetBusy:
            continue
    return started
