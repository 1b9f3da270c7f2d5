"""The directory's alert rules, asked at every evaluation from the last check of the join or the LDAP directory
(nothing is asked of the domain or the server for them): registered with analytics from DirectoryConfig.ready(). Each is raised once per host and cleared by a
check that finds it well again."""

from datetime import timedelta

from analytics.choices import Level, Rule
from analytics.hooks import alert_source
from directory import selectors
from directory.choices import CLOCK_SKEW_SECONDS, PASSWORD_AGE_DAYS

UNREACHABLE = Rule(
    "directory_unreachable",
    "Domain controller unreachable",
    Level.CRITICAL,
    help="No DC of the joined domain answered: open SMB sessions go on, new domain sign-ins fail.",
)
TRUST = Rule(
    "directory_trust",
    "Domain secure channel broken",
    Level.CRITICAL,
    help="net ads testjoin or wbinfo -t failed: the machine account no longer works (reset or deleted on the DC?).",
)
WINBIND = Rule(
    "directory_winbind", "winbind not answering", Level.CRITICAL, help="Domain users cannot sign in or own files."
)
CLOCK = Rule(
    "directory_clock_skew",
    "Clock skew with the domain",
    Level.WARNING,
    CLOCK_SKEW_SECONDS,
    "s",
    30,
    290,
    "The DC's clock and this host's differ by more than this: Kerberos refuses every sign-in at 300 s. Fix NTP.",
)
PASSWORD = Rule(
    "directory_machine_password",
    "Machine password not rotated",
    Level.WARNING,
    PASSWORD_AGE_DAYS,
    "days",
    8,
    365,
    "winbind changes the machine account's password every 7 days; one this old means it cannot (no writable DC?).",
)


@alert_source(UNREACHABLE, TRUST, WINBIND, CLOCK, PASSWORD)
def join_conditions(*, host, now, active):
    member = selectors.member_of(host=host)
    if member is None or member.checked_at is None:
        return
    where = f"{host.name} in {member.realm}"
    if member.reachable is False:
        yield UNREACHABLE.key, member.realm, f"{where}: no domain controller answered. {member.said[:300]}"
    if member.winbind_ok is False:
        yield WINBIND.key, member.realm, f"{where}: winbind does not answer. {member.said[:300]}"
    elif member.reachable and (member.testjoin_ok is False or member.trust_ok is False):
        yield TRUST.key, member.realm, f"{where}: the machine account's secure channel fails. {member.said[:300]}"
    rule = active.get(CLOCK.key)
    if rule and member.clock_offset is not None and abs(member.clock_offset) > rule.threshold:
        yield CLOCK.key, member.realm, f"{where}: the DC's clock is {member.clock_offset:+d} s from this host's."
    rule = active.get(PASSWORD.key)
    if rule and member.password_changed and now - member.password_changed > timedelta(days=rule.threshold):
        days = (now - member.password_changed).days
        yield PASSWORD.key, member.realm, f"{where}: the machine password last changed {days} days ago."


LDAP_UNREACHABLE = Rule(
    "directory_ldap_unreachable",
    "LDAP server unreachable",
    Level.CRITICAL,
    help="The LDAP directory did not answer a bind and a search over TLS (server down, certificate changed, bind "
    "password changed): sssd serves what it cached, new users are unknown.",
)
SSSD = Rule(
    "directory_sssd",
    "sssd not answering",
    Level.CRITICAL,
    help="sssd is not running or does not answer for the directory's users: their names and groups are not resolved "
    "on this host (files show bare ids).",
)


@alert_source(LDAP_UNREACHABLE, SSSD)
def ldap_conditions(*, host, now, active):
    ldap = selectors.ldap_of(host=host)
    if ldap is None or ldap.checked_at is None:
        return
    if ldap.reachable is False:
        yield LDAP_UNREACHABLE.key, ldap.uri, f"{host.name}: {ldap.uri} does not answer. {ldap.said[:300]}"
    if ldap.sssd_ok is False:
        yield SSSD.key, ldap.uri, f"{host.name}: sssd does not answer. {ldap.said[:300]}"
