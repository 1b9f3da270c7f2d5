"""LDAP users and groups for a NAS (UNIX-only sites, NFS): SSSD's id provider (nslcd, the other choice, is no longer
maintained upstream). Tarn writes one domain of its own into /etc/sssd/sssd.conf (mode 0600: sssd refuses any other,
and the bind password is in it), the LDAP server's CA certificate beside it, and `sss` into nsswitch; TLS is required
(StartTLS or ldaps://) and the certificate checked (`ldap_tls_reqcert = demand`). Enumeration stays off (it costs
the LDAP server a full search every few minutes): Tarn pages through LDAP itself for its lists.

Tarn's lists of an LDAP directory's users and groups come from the NAS itself (ldapsearch, paged, over the same
TLS against the same CA), the bind password on stdin (`-y /dev/stdin`), never in argv."""

import base64
import re
from dataclasses import dataclass, field

from hostlib.configfiles import HEADER, InvalidShare, nss_with, nss_without
from hostlib.errors import HostError
from hostlib.runner import Transport

SSSD_CONF = "/etc/sssd/sssd.conf"
CA_FILE = "/etc/sssd/tarn-ldap-ca.pem"
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
    if spec.bind_dn and not (1 <= len(bind_password.encode()) <= 256 and not set(bind_password) & set("\n\r\x00")):
        problems["bind_password"] = "1 to 256 bytes on one line (the bind DN's password)"
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
        "min_id = 1000",
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
POSIX_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}")


class LdapError(HostError):
    """The directory refused or did not answer; the message is ldapsearch's (printable characters only)."""


@dataclass
class Entry:
    dn: str
    attrs: dict[str, list[str]] = field(default_factory=dict)


def parse_ldif(text: str) -> list[Entry]:
    """`ldapsearch -LLL` output: entries apart by blank lines, folded lines (a leading space) joined, `attr:: b64`
    decoded; a value that does not decode to text is dropped (a server's reply is hostile input)."""
    entries, current = [], None
    lines: list[str] = []
    for raw in text.splitlines():
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


def posix_names(entries: list[Entry], attr: str) -> tuple[list[str], int]:
    """The names (uid or cn) of posix entries as Tarn may write them into a file, and how many were left out."""
    names, left_out = set(), 0
    for entry in entries:
        value = (entry.attrs.get(attr) or [""])[0]
        if POSIX_NAME.fullmatch(value) and not value.startswith("-"):
            names.add(value)
        else:
            left_out += 1
    return sorted(names), left_out


def search_argv(spec: LdapSpec, *, groups: bool = False) -> list[str]:
    """ldapsearch of every posix user (or group) under the base, paged, TLS demanded; the password (when binding)
    comes on stdin."""
    spec = check_ldap(spec, "x" if spec.bind_dn else "")
    argv = ["ldapsearch", "-LLL", "-o", "ldif-wrap=no", "-E", f"pr={PAGE}/noprompt", "-H", spec.uri]
    argv += ["-ZZ"] if spec.tls == "starttls" else []
    argv += ["-x", "-D", spec.bind_dn, "-y", "/dev/stdin"] if spec.bind_dn else ["-x"]
    what = ("(objectClass=posixGroup)", "cn") if groups else ("(objectClass=posixAccount)", "uid")
    return [*argv, "-b", spec.base_dn, "--", *what]


def search_names(t: Transport, spec: LdapSpec, password: str = "", *, groups: bool = False) -> tuple[list[str], int]:
    """The directory's posix users (or groups), every page of them, and how many were left out."""
    result = t.run(
        search_argv(spec, groups=groups),
        input=password if spec.bind_dn else None,
        env={"LDAPTLS_CACERT": CA_FILE, "LDAPTLS_REQCERT": "demand"},
        check=False,
        timeout=300,
        max_output=256 << 20,
    )
    if result.returncode != 0:
        said = "".join(c for c in (result.stderr.strip().splitlines() or ["?"])[-1] if c.isprintable())[:300]
        raise LdapError(f"The LDAP server did not list its {'groups' if groups else 'users'}: {said}")
    return posix_names(parse_ldif(result.stdout), "cn" if groups else "uid")
