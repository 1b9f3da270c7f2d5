"""LDAP users and groups for a NAS (UNIX-only sites, NFS): SSSD's id provider (nslcd, the other choice, is no longer
maintained upstream). Tarn writes one domain of its own into /etc/sssd/sssd.conf (mode 0600: sssd refuses any other,
and the bind password is in it), the LDAP server's CA certificate beside it, and `sss` into nsswitch; TLS is required
(StartTLS or ldaps://) and the certificate checked (`ldap_tls_reqcert = demand`). Enumeration stays off (it costs
the LDAP server a full search every few minutes): Tarn pages through LDAP itself for its lists.

Tarn's lists of an LDAP directory's users and groups come from the NAS itself (ldapsearch, paged, over the same
TLS against the same CA), never with the password in argv: on stdin (`-y /dev/stdin`) while Tarn has it (the
operation that sets the directory up), later from a file beside sssd.conf (0600, root's, as sssd.conf holds it too).
Tarn keeps no copy."""

import base64
import re
from dataclasses import dataclass, field

from hostlib.configfiles import HEADER, NSSWITCH, InvalidShare, current, nss_with, nss_without, put_back
from hostlib.errors import HostError, last_line
from hostlib.runner import ASK_SECONDS, Transport, asked, tools_missing

SSSD_CONF = "/etc/sssd/sssd.conf"
CA_FILE = "/etc/sssd/tarn-ldap-ca.pem"
CA_STAGE = "/etc/sssd/tarn-ldap-ca.new.pem"  # a new CA while the first search tests it (sssd keeps reading CA_FILE)
BIND_FILE = "/etc/sssd/tarn-ldap-bind"  # the bind DN's password, exactly (ldapsearch -y reads all of it)
CHECK_FILE = "/etc/sssd/tarn-check.conf"  # a rendered sssd.conf while sssctl checks it
DOMAIN = "tarn"
SCHEMAS = ("rfc2307", "rfc2307bis")
TLS = ("starttls", "ldaps")
_HOST = r"[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?"
URI = re.compile(rf"(ldaps?)://({_HOST}|\[[0-9A-Fa-f:]+\])(?::([0-9]{{1,5}}))?/?")
# A DN as Tarn writes it into a config line: attribute=value pairs, values without the characters that need escaping
# in a DN (RFC 4514) or that end a line; spaces inside a value allowed ("ou=Office Users").
_RDN = r"[A-Za-z][A-Za-z0-9-]{0,39}=[A-Za-z0-9_.@' -]{1,128}"
DN = re.compile(rf"{_RDN}(?:,{_RDN}){{0,19}}")
PEM = re.compile(r"-----BEGIN CERTIFICATE-----\r?\n[A-Za-z0-9+/=\r\n]+-----END CERTIFICATE-----\r?\n?")


@dataclass
class LdapSpec:
    """An LDAP directory: its URI (ldap://host with StartTLS, or ldaps://host), the base DN users and groups are
    under, a bind DN (empty: anonymous), the schema (rfc2307: memberUid; rfc2307bis: member DNs), and the CA
    certificate its server's certificate chains to."""

    uri: str
    base_dn: str
    ca_pem: str
    bind_dn: str = ""
    tls: str = "starttls"
    schema: str = "rfc2307"


def check_ldap(spec: LdapSpec, bind_password: str = "") -> LdapSpec:
    """The spec, or InvalidShare naming each field that is wrong."""
    problems: dict[str, str] = {}
    match = URI.fullmatch(spec.uri.strip())
    if not match or (match.group(3) and not 1 <= int(match.group(3)) <= 65535):
        problems["uri"] = (
            "ldap://host or ldaps://host, with a port if not the usual one (such as ldap://ldap.example.com)"
        )
    elif spec.tls not in TLS:
        problems["tls"] = "starttls (ldap://) or ldaps: Tarn sends no password or name over plain LDAP"
    elif (match.group(1) == "ldaps") != (spec.tls == "ldaps"):
        problems["tls"] = "ldaps:// goes with ldaps, ldap:// with StartTLS"
    if not DN.fullmatch(spec.base_dn.strip()):
        problems["base_dn"] = "A DN such as dc=example,dc=com (letters, digits, spaces, . _ @ ' - in values)"
    if spec.bind_dn and not DN.fullmatch(spec.bind_dn.strip()):
        problems["bind_dn"] = "A DN such as cn=nas,ou=services,dc=example,dc=com, or empty to search anonymously"
    if spec.bind_dn and not (
        1 <= len(bind_password.encode()) <= 256
        and not set(bind_password) & set("\n\r\x00")
        and bind_password == bind_password.strip()
    ):
        problems["bind_password"] = "1 to 256 bytes on one line, no space at either end (sssd.conf would drop it)"
    if spec.schema not in SCHEMAS:
        problems["schema"] = f"One of {', '.join(SCHEMAS)}"
    pems = PEM.findall(spec.ca_pem.strip() + "\n")
    if not pems or len("".join(pems)) > 64_000 or "".join(pems).strip() != spec.ca_pem.strip():
        problems["ca_pem"] = "The CA certificate(s), PEM (-----BEGIN CERTIFICATE----- …), and nothing else"
    if problems:
        raise InvalidShare(problems)
    return LdapSpec(
        uri=spec.uri.strip().rstrip("/"),
        base_dn=spec.base_dn.strip(),
        ca_pem=spec.ca_pem.strip() + "\n",
        bind_dn=spec.bind_dn.strip(),
        tls=spec.tls,
        schema=spec.schema,
    )


def render_sssd(spec: LdapSpec, bind_password: str = "") -> str:
    """/etc/sssd/sssd.conf with Tarn's one domain (written mode 0600): ids from LDAP, no logins through it (a NAS's
    LDAP users own files and reach NFS; they get no shell here), TLS demanded against the CA file."""
    spec = check_ldap(spec, bind_password)
    lines = [
        HEADER.rstrip(),
        "[sssd]",
        "config_file_version = 2",
        "services = nss",
        f"domains = {DOMAIN}",
        "",
        f"[domain/{DOMAIN}]",
        "id_provider = ldap",
        "auth_provider = none",
        f"ldap_uri = {spec.uri}",
        f"ldap_search_base = {spec.base_dn}",
        f"ldap_schema = {spec.schema}",
        f"ldap_id_use_start_tls = {'true' if spec.tls == 'starttls' else 'false'}",
        "ldap_tls_reqcert = demand",
        f"ldap_tls_cacert = {CA_FILE}",
        "enumerate = false",
        "cache_credentials = false",
        "override_shell = /usr/sbin/nologin",
        "override_homedir = /nonexistent",
        f"min_id = {MIN_ID}",
    ]
    if spec.bind_dn:
        lines += [
            f"ldap_default_bind_dn = {spec.bind_dn}",
            "ldap_default_authtok_type = password",
            f"ldap_default_authtok = {bind_password}",
        ]
    return "\n".join(lines) + "\n"


def with_sss(nsswitch: str) -> str:
    return nss_with(nsswitch, "sss")


def without_sss(nsswitch: str) -> str:
    return nss_without(nsswitch, "sss")


# --- listing (ldapsearch on the NAS) ---------------------------------------------------------------------------
PAGE = 500  # a server's usual size limit (OpenLDAP's default, Debian's olcSizeLimit) is at least this
POSIX_NAME = re.compile(r"[a-z_][a-z0-9_.-]{0,31}")  # as Samba's valid users and useradd take a name (samba.USER)
MIN_ID = 1000  # sssd.conf's min_id: ids below it are the system's own, never looked up in LDAP


class LdapError(HostError):
    """The directory refused or did not answer; the message is ldapsearch's (printable characters only)."""


# What ldapsearch's errors mean to an admin (OpenLDAP's words, then Tarn's).
HINTS = {
    "Connect error (-11)": "the TLS handshake failed: is the CA the one that signed the server's certificate, and does "
    "the certificate name the server as the URI does?",
    "Can't contact LDAP server (-1)": "nothing answered at that address and port",
    "Invalid credentials (49)": "the bind DN or its password is wrong",
    "No such object (32)": "the base DN is not on that server",
    "Size limit exceeded (4)": "the server stops a listing at its size limit (slapd's default: 500 entries, paged or "
    'not): give the bind DN a higher one, e.g. olcLimits: dn.exact="<bind DN>" size.prtotal=unlimited',
}


def ldap_said(result) -> str:
    """ldapsearch's error lines on one line (printable characters only), with what they mean."""
    said = "; ".join(last_line(line, 200) for line in result.stderr.splitlines() if line.strip())[:400]
    hint = next((h for words, h in HINTS.items() if words in result.stderr), "")
    return (said or f"exit status {result.returncode}") + (f" ({hint})" if hint else "")


@dataclass
class Entry:
    dn: str
    attrs: dict[str, list[str]] = field(default_factory=dict)


def parse_ldif(text: str) -> list[Entry]:
    """`ldapsearch -LLL` output: entries apart by blank lines, folded lines (a leading space) joined, `attr:: b64`
    decoded; a value that does not decode to text is dropped (a server's reply is hostile input)."""
    entries, current = [], None
    lines: list[str] = []
    for raw in text.replace("\r\n", "\n").split("\n"):  # not splitlines(): \x1c, \x85, \u2028 are no line ends
        if raw.startswith(" ") and lines:
            lines[-1] += raw[1:]
        else:
            lines.append(raw)
    for line in [*lines, ""]:
        if not line.strip():
            if current is not None:
                entries.append(current)
            current = None
            continue
        if line.startswith("#"):
            continue
        key, sep, value = line.partition(":")
        if not sep:
            continue
        if value.startswith(":"):
            try:
                value = base64.b64decode(value[1:].strip(), validate=True).decode()
            except (ValueError, UnicodeDecodeError):
                continue
        else:
            value = value.strip()
        if key.lower() == "dn":
            current = Entry(dn=value)
        elif current is not None:
            current.attrs.setdefault(key.lower(), []).append(value)
    return entries


def posix_names(entries: list[Entry], attr: str, id_attr: str) -> tuple[list[str], int]:
    """The names (uid or cn) of posix entries as Tarn may write them into a file and sssd resolves (an id of
    MIN_ID or above), and how many were left out."""
    names, left_out = set(), 0
    for entry in entries:
        value = (entry.attrs.get(attr) or [""])[0]
        number = (entry.attrs.get(id_attr.lower()) or [""])[0]
        if POSIX_NAME.fullmatch(value) and number.isdigit() and int(number) >= MIN_ID:
            names.add(value)
        else:
            left_out += 1
    return sorted(names), left_out


def _ldapsearch(spec: LdapSpec, password: str | None) -> list[str]:
    """ldapsearch's options for this directory: TLS demanded, a simple bind with the password on stdin (given) or
    from the bind file (not given)."""
    spec = check_ldap(spec, "x" if spec.bind_dn else "")
    argv = ["ldapsearch", "-LLL", "-o", "ldif-wrap=no", "-H", spec.uri]
    argv += ["-ZZ"] if spec.tls == "starttls" else []
    if spec.bind_dn:
        return [*argv, "-x", "-D", spec.bind_dn, "-y", "/dev/stdin" if password is not None else BIND_FILE]
    return [*argv, "-x"]


def search_argv(spec: LdapSpec, *, groups: bool = False, password: str | None = None) -> list[str]:
    """ldapsearch of every posix user (or group) under the base, paged."""
    what = (
        ("(objectClass=posixGroup)", "cn", "gidNumber")
        if groups
        else ("(objectClass=posixAccount)", "uid", "uidNumber")
    )
    argv = _ldapsearch(spec, password)
    return [*argv, "-E", f"pr={PAGE}/noprompt", "-b", spec.base_dn.strip(), "--", *what]


TLS_ENV = {"LDAPTLS_CACERT": CA_FILE, "LDAPTLS_REQCERT": "demand"}


def search_names(
    t: Transport, spec: LdapSpec, password: str | None = None, *, groups: bool = False, ca: str = CA_FILE
) -> tuple[list[str], int]:
    """The directory's posix users (or groups), every page of them, and how many were left out. The password: the
    bind DN's, while Tarn has it; None once the bind file is on the host. ca: the staged one while setting up."""
    result = t.run(
        search_argv(spec, groups=groups, password=password),
        input=password if spec.bind_dn and password is not None else None,
        env={**TLS_ENV, "LDAPTLS_CACERT": ca},
        check=False,
        timeout=300,
        max_output=256 << 20,
    )
    if result.returncode != 0:
        raise LdapError(f"The LDAP server did not list its {'groups' if groups else 'users'}: {ldap_said(result)}")
    return posix_names(parse_ldif(result.stdout), *(("cn", "gidNumber") if groups else ("uid", "uidNumber")))


# --- the client's configuration ------------------------------------------------------------------------------
LDAP_TOOLS = ("sssd", "sssctl", "ldapsearch")


def ldap_tools_missing(t: Transport) -> list[str]:
    """The programs an LDAP client needs that this host lacks (Debian: sssd-ldap, sssd-tools, libnss-sss,
    ldap-utils)."""
    return tools_missing(t, LDAP_TOOLS)


@dataclass
class LdapBefore:
    """The files as they were, to put back when setting up fails."""

    sssd_conf: str
    ca: str
    bind: str
    nsswitch: str
    applied: bool = False  # ldap_apply began: sssd's files (and sssd) were touched


def ldap_stage(t: Transport, spec: LdapSpec) -> LdapBefore:
    """What a first search needs, before sssd is touched: the new CA beside the one in use (CA_STAGE). Returns what
    was there. An sssd.conf Tarn did not write (FreeIPA's, an admin's) is refused, never replaced."""
    spec = check_ldap(spec, "x" if spec.bind_dn else "")
    before = LdapBefore(
        sssd_conf=current(t, SSSD_CONF),
        ca=current(t, CA_FILE),
        bind=current(t, BIND_FILE),
        nsswitch=t.read_file(NSSWITCH),
    )
    if before.sssd_conf.strip() and not before.sssd_conf.startswith(HEADER):
        raise LdapError(f"{SSSD_CONF} is not Tarn's (sssd is set up by hand or another tool here): leave it or move it")
    t.write_file(CA_STAGE, spec.ca_pem, mode=0o644)
    return before


def ldap_apply(t: Transport, spec: LdapSpec, before: LdapBefore, password: str = "") -> None:
    """sssd.conf (0600) checked by sssctl first (a copy beside it; sssd.conf itself is written only once the copy
    passes), the bind file, sss in nsswitch, sssd enabled and restarted (it reads its config only at start) with its
    cache emptied."""
    text = render_sssd(spec, password)
    t.write_file(CHECK_FILE, text, mode=0o600)
    try:
        checked = t.run(["sssctl", "config-check", "-c", CHECK_FILE], check=False, timeout=60)
    finally:
        t.remove_file(CHECK_FILE)
    if checked.returncode != 0:
        raise LdapError(f"sssctl refused the configuration: {last_line(checked.stdout + checked.stderr, 300)}")
    before.applied = True
    t.write_file(CA_FILE, spec.ca_pem, mode=0o644)
    t.remove_file(CA_STAGE)
    t.write_file(SSSD_CONF, text, mode=0o600)
    if spec.bind_dn:
        t.write_file(BIND_FILE, password, mode=0o600)
    else:
        t.remove_file(BIND_FILE)
    t.write_file(NSSWITCH, with_sss(t.read_file(NSSWITCH)))
    t.run(["systemctl", "enable", "sssd"], mutating=True, timeout=60)
    t.run(["systemctl", "restart", "sssd"], mutating=True, timeout=120)
    t.run(["sss_cache", "-E"], mutating=True, check=False, timeout=60)


def ldap_restore(t: Transport, before: LdapBefore) -> None:
    """The files as they were and sssd as they make it (off when there was no sssd.conf): a set-up that failed
    leaves nothing of itself."""
    t.remove_file(CA_STAGE)
    if not before.applied:
        return  # only the staged CA was written
    put_back(t, SSSD_CONF, before.sssd_conf, 0o600)
    put_back(t, CA_FILE, before.ca, 0o644)
    put_back(t, BIND_FILE, before.bind, 0o600)
    t.write_file(NSSWITCH, before.nsswitch)
    if before.sssd_conf:
        t.run(["systemctl", "restart", "sssd"], mutating=True, check=False, timeout=120)
    else:
        t.run(["systemctl", "disable", "--now", "sssd"], mutating=True, check=False, timeout=120)


def ldap_off(t: Transport) -> None:
    """The directory removed: sss out of nsswitch, sssd stopped and off at boot, its config, CA and bind files
    gone."""
    t.write_file(NSSWITCH, without_sss(t.read_file(NSSWITCH)))
    t.run(["systemctl", "disable", "--now", "sssd"], mutating=True, check=False, timeout=120)
    for path in (SSSD_CONF, BIND_FILE, CA_FILE, CA_STAGE):
        t.remove_file(path)


def resolves(t: Transport, name: str) -> bool:
    """Does the host know this user through sssd (as a file owner would be looked up)?"""
    if not POSIX_NAME.fullmatch(name) or name.startswith("-"):
        return False
    return t.run(["getent", "-s", "sss", "passwd", "--", name], check=False, timeout=ASK_SECONDS).returncode == 0


def reachable(t: Transport, spec: LdapSpec) -> tuple[bool, str]:
    """The directory answers a bind and a base search over TLS (the bind file's password)."""
    argv = [*_ldapsearch(spec, None), "-s", "base", "-b", spec.base_dn.strip(), "--", "(objectClass=*)", "1.1"]
    result = asked(t, argv, env=TLS_ENV)
    return (True, "") if result.returncode == 0 else (False, ldap_said(result))


def sssd_answers(t: Transport, name: str = "") -> tuple[bool, str]:
    """sssd runs and answers a lookup of one of the directory's users (sssctl's online status needs sssd's D-Bus
    responder, which a NAS has no other use for)."""
    state = asked(t, ["systemctl", "is-active", "sssd"]).stdout.strip()
    if state != "active":
        return False, f"sssd is {state or 'not running'}"
    if name and not resolves(t, name):
        return False, f"sssd does not answer for {name}"
    return True, ""
