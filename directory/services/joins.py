"""Joining a domain and leaving it, each an Operation. The join account's password is typed once: it travels only
as the operation's secret (split between the queued message and the database, gone once the work starts) and
reaches net on stdin. A join that fails puts every file back as it was; the old config stays live."""

import time

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from appliance.checks import confirmed
from appliance.models import Operation
from appliance.operations import Tracker, operation_runner, operation_start
from directory import selectors
from directory.choices import JOIN_SECONDS, TRUST_WAIT_SECONDS
from directory.models import DirectoryName, DomainMember
from directory.services.checks import member_check
from directory.services.names import names_refresh
from hostlib import directory, samba
from hostlib.configfiles import InvalidShare
from hostlib.directory import IdRange, JoinSpec
from hostlib.errors import HostError
from shares.services import share_domain_apply


def _spec(params: dict) -> JoinSpec:
    return JoinSpec(
        realm=params["realm"],
        workgroup=params["workgroup"],
        dc=params.get("dc", ""),
        backend=params["backend"],
        default_range=IdRange(*params["default_range"]),
        domain_range=IdRange(*params["domain_range"]),
    )


def _refused(exc: InvalidShare) -> ValidationError:
    return ValidationError(exc.problems)


def member_join_start(
    *,
    host,
    user,
    realm: str,
    workgroup: str,
    dc: str = "",
    backend: str = "rid",
    default_range: IdRange,
    domain_range: IdRange,
    username: str,
    password: str,
    sessions_ok: bool = False,
) -> Operation:
    """Join host to the domain: the spec checked here (and again on the host, against its own ids), the join
    account's password the operation's secret. sessions_ok: go on while SMB users are connected (their sessions
    survive; new sign-ins go through the domain)."""
    spec = JoinSpec(
        realm=realm, workgroup=workgroup, dc=dc, backend=backend, default_range=default_range, domain_range=domain_range
    )
    try:
        spec = directory.check_join(spec)
        directory.check_join_account(username, password)
    except InvalidShare as exc:
        raise _refused(exc) from None
    if DomainMember.objects.filter(host=host).exists():
        raise ValidationError({"realm": f"{host.name} is in a domain already: leave it first."})
    if other := selectors.other_directory(host=host, wanted="domain"):
        raise ValidationError({"realm": other})
    params = {
        "realm": spec.realm,
        "workgroup": spec.workgroup,
        "dc": spec.dc,
        "backend": spec.backend,
        "default_range": [spec.default_range.low, spec.default_range.high],
        "domain_range": [spec.domain_range.low, spec.domain_range.high],
        "username": username,
        "sessions_ok": bool(sessions_ok),
    }
    return operation_start(
        kind="directory.join",
        subject="",
        host=host,
        user=user,
        params=params,
        secret=password,
        seconds=JOIN_SECONDS,
    )


def _sessions_named(t, params: dict) -> None:
    """A join changes how smbd signs users in: connected users are named first, and the join goes on only when the
    admin said so (their sessions survive it)."""
    if params.get("sessions_ok"):
        return
    open_ = samba.sessions(t)
    if open_:
        who = ", ".join(sorted({f"{s.user} from {s.machine}" for s in open_})[:5])
        raise ValidationError(
            {"sessions_ok": f"{len(open_)} SMB session(s) open ({who}). Tick “Join while users are connected”."}
        )


def _wait_trust(t, tracker: Tracker, seconds: int) -> tuple[bool, str]:
    """winbind's secure channel, asked until it holds (a new member's takes a while on a loaded host)."""
    deadline = time.monotonic() + seconds
    while True:
        ok, said = directory.trust_ok(t)
        if ok or time.monotonic() > deadline:
            return ok, said
        tracker.progress(70, f"Waiting for winbind's secure channel ({said[:80]})")
        time.sleep(3)


def _secret(tracker: Tracker) -> str:
    if not tracker.secret:
        raise ValidationError({"password": "The password did not reach the worker: start again."})
    return tracker.secret


def _undo(t, tracker: Tracker, host, before, joined: bool) -> None:
    """A join that failed after net joined: leave again (the account deleted on the DC), SMB back to its own
    workgroup, winbind off, every file as it was. Each step goes on past the one before it failing."""
    steps = []
    if joined:
        steps.append(
            ("leave the domain again", lambda: directory.leave(t, tracker.op.params["username"], _secret(tracker)))
        )
        steps.append(("stop winbind", lambda: directory.winbind_off(t)))
    steps.append(("give SMB its own workgroup back", lambda: share_domain_apply(t, host=host, workgroup="")))
    steps.append(("put the files back", lambda: directory.member_restore(t, before)))
    for what, step in steps:
        try:
            step()
        except (HostError, ValidationError) as exc:
            tracker.log(f"could not {what}: {exc}")


@operation_runner("directory.join", lock="directory", queue="host")
def member_join_run(tracker: Tracker) -> None:
    op, params = tracker.op, tracker.op.params
    if other := selectors.other_directory(host=op.host, wanted="domain"):  # set up since this was queued
        raise ValidationError({"realm": other})
    t = tracker.transport()
    password = _secret(tracker)
    missing = directory.member_tools_missing(t)
    if missing:
        raise ValidationError(f"{op.host.name} lacks {', '.join(missing)}: install samba, winbind, libnss-winbind.")
    tracker.progress(5, "Checking the id ranges against this host's accounts")
    ids, highest = directory.host_ids(t)
    try:
        spec = directory.check_join(_spec(params), local_ids=ids, local_max=highest)
        netbios = directory.netbios_name(t)
    except InvalidShare as exc:
        raise _refused(exc) from None
    _sessions_named(t, params)
    tracker.progress(10, f"Asking {spec.dc or spec.realm} for the domain")
    info = directory.ads_info(t, spec)
    if info.offset is not None and abs(info.offset) >= 300:
        raise ValidationError(f"The DC's clock is {info.offset} s off this host's: Kerberos refuses at 300. Fix NTP.")
    tracker.log(f"DC {info.ldap_server_name or info.ldap_server} answered; clock offset {info.offset} s")
    tracker.progress(20, "Writing the member settings (checked by testparm)")
    before = directory.member_prepare(t, spec, netbios)
    joined = False
    try:
        tracker.progress(30, f"Joining {spec.realm} as {netbios}$")
        tracker.log(directory.join(t, spec, params["username"], password))
        joined = True
        tracker.progress(50, "Starting winbind")
        directory.winbind_on(t, reload=False)
        tracker.progress(60, "Serving the domain's workgroup to SMB clients (smbd reloads the member settings)")
        share_domain_apply(t, host=op.host, workgroup=spec.workgroup)
    except Exception:
        _undo(t, tracker, op.host, before, joined)
        raise
    member, _ = DomainMember.objects.update_or_create(
        host=op.host,
        defaults={
            "realm": spec.realm,
            "workgroup": spec.workgroup,
            "dc": spec.dc,
            "netbios_name": netbios,
            "backend": spec.backend,
            "default_range": str(spec.default_range),
            "domain_range": str(spec.domain_range),
            "joined_at": timezone.now(),
            "joined_by": params["username"],
        },
    )
    ok, said = _wait_trust(t, tracker, TRUST_WAIT_SECONDS)
    tracker.log(f"secure channel: {said}")
    member_check(member=member, transport=t)
    if ok:
        tracker.progress(85, "Listing the domain's users and groups")
        names_refresh(member=member, transport=t)
    tracker.progress(
        100,
        f"Joined {spec.realm} as {netbios}$"
        + ("" if ok else f"; the secure channel is not up yet ({said[:120]}): see the Directory page"),
    )


def member_leave_start(*, host, user, username: str = "", password: str = "", confirm: str, local_only: bool = False):
    """Leave the domain: the machine account deleted on the DC with a domain account that may (local_only: the DC is
    gone for good, only this host forgets it). confirm: the realm typed again."""
    member = DomainMember.objects.filter(host=host).first()
    if member is None:
        raise ValidationError({"confirm": f"{host.name} is not in a domain."})
    confirmed(confirm, member.realm, f"Type the domain's realm ({member.realm}) to leave it.")
    if local_only:
        username = password = ""  # nothing is asked of the DC: neither is kept nor sent
    else:
        try:
            directory.check_join_account(username, password)
        except InvalidShare as exc:
            raise _refused(exc) from None
    return operation_start(
        kind="directory.leave",
        host=host,
        user=user,
        params={"realm": member.realm, "username": username, "local_only": bool(local_only)},
        secret=password or None,
        seconds=JOIN_SECONDS,
    )


@operation_runner("directory.leave", lock="directory", queue="host")
def member_leave_run(tracker: Tracker) -> None:
    op, params = tracker.op, tracker.op.params
    t = tracker.transport()
    if params.get("local_only"):
        tracker.log("Left on this host only: the machine account stays in the domain (delete it there).")
    else:
        tracker.progress(20, f"Leaving {params['realm']}")
        tracker.log(directory.leave(t, params["username"], _secret(tracker)))
    tracker.progress(60, "Stopping winbind; SMB back to its own workgroup")
    directory.winbind_off(t)
    share_domain_apply(t, host=op.host, workgroup="")
    with transaction.atomic():
        DirectoryName.objects.filter(host=op.host).delete()
        DomainMember.objects.filter(host=op.host).delete()
    tracker.progress(100, f"Left {params['realm']}")
