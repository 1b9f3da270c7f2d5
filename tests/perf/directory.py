"""Issue 42 figures: the Directory page over 10,000 domain users served from Tarn's copy (p95, gunicorn under wrk, as
`make run` serves it); a refresh of that copy, 10,000 names replayed through the real parser and store; and in the
lab, with 10,000 users made on the DC, the join end to end and Tarn's refresh against `wbinfo -u` by hand."""

import statistics
import time

from tests.perf.foundation import admin_session_cookie, lab_host, run_operations_inline, tarn_served, wrk

USERS = 10_000
GROUPS = 300


def _member(name: str):
    from django.utils import timezone

    from appliance.models import Host
    from directory.models import DomainMember

    host, _ = Host.objects.get_or_create(name=name, defaults={"address": "perf.example"})
    DomainMember.objects.get_or_create(
        host=host,
        defaults={
            "realm": "PERF.TEST",
            "workgroup": "PERF",
            "netbios_name": "NAS",
            "backend": "rid",
            "joined_at": timezone.now(),
        },
    )
    return host


def _names(kind: str, count: int, prefix: str) -> str:
    return "".join(f"PERF\\{prefix}{i:05d}\n" for i in range(count))


def page_p95():
    admin_session_cookie()
    from directory.models import DirectoryName

    host = _member("perf-directory")
    if not DirectoryName.objects.filter(host=host).exists():
        DirectoryName.objects.bulk_create(
            [DirectoryName(host=host, kind="user", name=f"user{i:05d}") for i in range(USERS)]
            + [DirectoryName(host=host, kind="group", name=f"group{i:04d}") for i in range(GROUPS)],
            batch_size=2000,
        )
    cookie = admin_session_cookie(host_id=host.pk)
    with tarn_served() as base:
        for name, path in [("first_page", "/directory/"), ("search", "/directory/?kind=user&q=user07")]:
            p95, rate, errors = wrk(f"{base}{path}", cookie, clients=10, pause_ms=500, seconds=20)
            yield f"directory_page_{name}_p95_{USERS}_users", p95, "ms", "goal <= 150 ms from Tarn's copy; 10 clients"
            yield f"directory_page_{name}_failed", errors, "count", "goal 0"


def refresh_replayed():
    admin_session_cookie()
    from directory.models import DomainMember
    from directory.services import names_refresh
    from hostlib.directory import parse_names
    from tests.support.runners import FakeHost

    host = _member("perf-directory-refresh")
    member = DomainMember.objects.get(host=host)
    users, groups = _names("user", USERS, "user"), _names("group", GROUPS, "group")
    fake = FakeHost()
    fake.answer("wbinfo", "-u", stdout=users)
    fake.answer("wbinfo", "-g", stdout=groups)
    t = fake.transport(read_only=True)
    first = time.perf_counter()
    names_refresh(member=member, transport=t)
    first = time.perf_counter() - first
    again = []
    for _ in range(5):
        started = time.perf_counter()
        names_refresh(member=member, transport=t)
        again.append(time.perf_counter() - started)
    parse = []
    for _ in range(5):
        started = time.perf_counter()
        parse_names(users, "PERF")
        parse.append(time.perf_counter() - started)
    yield f"directory_refresh_first_{USERS}_users", first * 1000, "ms", "replayed: every row new"
    yield f"directory_refresh_again_{USERS}_users", statistics.median(again) * 1000, "ms", "replayed: rows kept"
    yield f"directory_parse_{USERS}_users", statistics.median(parse) * 1000, "ms", "informational"


def lab_refresh():
    """The lab: the DC holds 10,000 users (one ldbadd), the first guest joins through Tarn; Tarn's refresh (its
    operation's work: wbinfo -u and -g over SSH, parse, store) against `wbinfo -u` run by hand in the guest."""
    found = lab_host("directory")
    if found is None:
        return
    guest, host = found
    from appliance.connect import transport_for
    from appliance.models import Operation, User
    from directory.models import DomainMember
    from directory.services import member_join_start, names_refresh
    from hostlib.directory import IdRange
    from tests.support.domain import ADMIN_PASSWORD, DC_FQDN, REALM, WORKGROUP, enter_domain
    from tests.support.lab import lab_up
    from tests.support.lab_fixtures import SECOND

    dc = lab_up(overrides=SECOND)
    enter_domain(guest, dc)
    base = "DC=" + ",DC=".join(REALM.lower().split("."))
    have = int(
        dc.sh(
            f"ldbsearch -H /var/lib/samba/private/sam.ldb -b 'CN=Users,{base}' '(sAMAccountName=perf*)' dn | grep -c '^dn:' || true"
        ).strip()
        or 0
    )
    if have < USERS:
        started = time.monotonic()
        dc.sh(
            f"for i in $(seq -f %05g {have} {USERS - 1}); do printf 'dn: CN=perf%s,CN=Users,{base}\\nobjectClass: user\\n"
            "sAMAccountName: perf%s\\n\\n' $i $i; done > /tmp/perf.ldif && "
            "ldbadd -H /var/lib/samba/private/sam.ldb /tmp/perf.ldif >/dev/null",
            timeout=3600,
        )
        yield "directory_lab_make_users", time.monotonic() - started, "s", f"ldbadd of {USERS - have} users on the DC"
    run_operations_inline()
    user = User.objects.filter(username="perf").first()
    started = time.monotonic()
    op = member_join_start(
        host=host,
        user=user,
        realm=REALM,
        workgroup=WORKGROUP,
        dc=DC_FQDN,
        default_range=IdRange(100000, 199999),
        domain_range=IdRange(200000, 2199999),
        username="Administrator",
        password=ADMIN_PASSWORD,
    )
    op = Operation.objects.get(pk=op.pk)
    yield "directory_lab_join_end_to_end", time.monotonic() - started, "s", f"{op.status}: {op.message[:80]}"
    member = DomainMember.objects.get(host=host)
    t = transport_for(host, read_only=True)
    by_hand, tarn = [], []
    for _ in range(3):
        started = time.monotonic()
        guest.sh("wbinfo -u >/dev/null && wbinfo -g >/dev/null", timeout=600)
        by_hand.append(time.monotonic() - started)
        started = time.monotonic()
        users, _ = names_refresh(member=member, transport=t)
        tarn.append(time.monotonic() - started)
    yield "directory_lab_users_listed", users, "count", f"goal >= {USERS}"
    yield "directory_lab_wbinfo_by_hand", statistics.median(by_hand), "s", "wbinfo -u and -g over SSH"
    yield "directory_lab_tarn_refresh", statistics.median(tarn), "s", "Tarn's refresh"
    yield "directory_lab_refresh_over_by_hand", statistics.median(tarn) / statistics.median(by_hand), "x", "goal <= 1.2"


CHECKS = [page_p95, refresh_replayed, lab_refresh]
