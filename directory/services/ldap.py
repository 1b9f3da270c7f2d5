"""An LDAP directory's users and groups on a host (UNIX-only sites, NFS), through sssd: set up, checked and removed,
each an Operation. The bind password is typed once: it travels as the operation's secret, reaches ldapsearch on stdin
for the first search and then lives only on the host (sssd.conf and the bind file, root's, 0600). A set-up that fails
puts every file back and sssd as it was; the old config stays live."""

import time

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from appliance.checks import confirmed
from appliance.models import Operation
from appliance.operations import Tracker, operation_runner, operation_start
from directory import selectors
from directory.choices import JOIN_SECONDS
from directory.models import DirectoryName, LdapDirectory
from directory.services.checks import ldap_check
from directory.services.names import names_store
from hostlib import sssd
from hostlib.configfiles import InvalidShare
from hostlib.errors import HostError
from hostlib.runner import Transport
from hostlib.sssd import LdapSpec

RESOLVE_SECONDS = 60  # sssd, just restarted, answers its first lookup once it has reached the server


def ldap_configure_start(
    *,
    host,
    user,
    uri: str,
    base_dn: str,
    ca_pem: str,
    tls: str = "starttls",
    schema: str = "rfc2307",
    bind_dn: str = "",
    bind_password: str = "",
) -> Operation:
    """Read users and groups from this LDAP directory on host (or change the one it reads): checked here, again on
    the host (a first search over TLS against the CA) before sssd is touched."""
    spec = LdapSpec(uri=uri, base_dn=base_dn, ca_pem=ca_pem, bind_dn=bind_dn, tls=tls, schema=schema)
    try:
        spec = sssd.check_ldap(spec, bind_password)
    except InvalidShare as exc:
        raise ValidationError(exc.problems) from None
    if other := selectors.other_directory(host=host, wanted="ldap"):
        raise ValidationError({"uri": other})
    params = {
        "uri": spec.uri,
        "base_dn": spec.base_dn,
        "ca_pem": spec.ca_pem,
        "tls": spec.tls,
        "schema": spec.schema,
        "bind_dn": spec.bind_dn,
    }
    return operation_start(
        kind="directory.ldap",
        host=host,
        user=user,
        params=params,
        secret=bind_password if spec.bind_dn else None,
        seconds=JOIN_SECONDS,
    )


def _resolves(t: Transport, name: str) -> bool:
    deadline = time.monotonic() + RESOLVE_SECONDS
    while not sssd.resolves(t, name):
        if time.monotonic() > deadline:
            return False
        time.sleep(2)
    return True


@operation_runner("directory.ldap", lock="directory", queue="host")
def ldap_configure_run(tracker: Tracker) -> None:
    op, params = tracker.op, tracker.op.params
    spec = LdapSpec(**params)
    password = tracker.secret or ""
    if spec.bind_dn and not password:
        raise ValidationError({"bind_password": "The password did not reach the worker: start again."})
    if other := selectors.other_directory(host=op.host, wanted="ldap"):  # joined since this was queued
        raise ValidationError({"uri": other})
    t = tracker.transport()
    missing = sssd.ldap_tools_missing(t)
    if missing:
        raise ValidationError(f"{op.host.name} lacks {', '.join(missing)}: install sssd-ldap, sssd-tools, ldap-utils.")
    tracker.progress(10, "Writing the CA certificate beside the one in use")
    before = sssd.ldap_stage(t, spec)
    try:
        tracker.progress(20, f"Searching {spec.uri} over TLS for users and groups")
        bound = password if spec.bind_dn else None
        users, left_users = sssd.search_names(t, spec, bound, ca=sssd.CA_STAGE)
        groups, left_groups = sssd.search_names(t, spec, bound, groups=True, ca=sssd.CA_STAGE)
        tracker.log(f"{len(users)} users and {len(groups)} groups under {spec.base_dn}")
        tracker.progress(50, "Writing sssd.conf (checked by sssctl), sss into nsswitch, restarting sssd")
        sssd.ldap_apply(t, spec, before, password)
        if users:
            tracker.progress(70, f"Looking {users[0]} up through sssd")
            if not _resolves(t, users[0]):
                raise ValidationError(f"sssd did not find {users[0]} within {RESOLVE_SECONDS} s: see its journal.")
    except Exception:
        try:
            sssd.ldap_restore(t, before)
        except HostError as exc:
            tracker.log(f"could not put the files back: {exc}")
        raise
    row, _ = LdapDirectory.objects.update_or_create(
        host=op.host,
        defaults={**params, "configured_at": timezone.now(), "configured_by": op.user.username if op.user else ""},
    )
    names_store(row, users, groups, left_users + left_groups)
    ldap_check(row=row, transport=t)
    tracker.progress(100, f"Reading {len(users)} users and {len(groups)} groups from {spec.uri}")


def ldap_remove_start(*, host, user, confirm: str) -> Operation:
    """Stop reading the LDAP directory: sssd off, sss out of nsswitch, its files gone. confirm: the URI typed."""
    row = LdapDirectory.objects.filter(host=host).first()
    if row is None:
        raise ValidationError({"confirm": f"{host.name} reads no LDAP directory."})
    confirmed(confirm, row.uri, f"Type the directory's URI ({row.uri}) to remove it.")
    return operation_start(kind="directory.ldap_remove", host=host, user=user, params={"uri": row.uri})


@operation_runner("directory.ldap_remove", lock="directory", queue="host")
def ldap_remove_run(tracker: Tracker) -> None:
    tracker.progress(30, "Stopping sssd; sss out of nsswitch; its files removed")
    sssd.ldap_off(tracker.transport())
    with transaction.atomic():
        DirectoryName.objects.filter(host=tracker.op.host).delete()
        LdapDirectory.objects.filter(host=tracker.op.host).delete()
    tracker.progress(100, f"No longer reading {tracker.op.params['uri']}")
