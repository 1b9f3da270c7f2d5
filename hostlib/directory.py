"""Directory services on a NAS: joining an Active Directory domain as a Samba member server (winbind), and what
Tarn reads back (the join's health, the domain's users and groups). Every value is checked here before a file is
rendered or an argv built: a realm, a workgroup, a DC's name, the join account and the idmap ranges, and every name
read back from the domain is hostile input (a user name may hold a backslash, quotes or a newline).

Ranges: local accounts (useradd, Tarn's own Samba users among them) take ids from login.defs' UID_MIN..UID_MAX
(Debian: 1000-60000); a domain's ids must start above that, and no range may cover an id a local account or group
already has, or another range."""

import json
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from hostlib import samba
from hostlib.configfiles import HEADER, NSSWITCH, InvalidShare, current, nss_with, nss_without, put_back
from hostlib.errors import HostError
from hostlib.runner import Transport, asked, tools_missing

# A DNS name of two or more labels (AD.EXAMPLE.COM): no spaces, no trailing dot, each label 1-63 characters.
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
REALM = re.compile(rf"{_LABEL}(?:\.{_LABEL})+")
HOSTNAME = re.compile(rf"{_LABEL}(?:\.{_LABEL})*")
IPV4 = re.compile(
    r"(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])(?:\.(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])){3}"
)
# The NetBIOS name of the domain: 1-15 characters (Samba's workgroup).
WORKGROUP = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,14}")
# An account's sAMAccountName as Tarn takes it to join: no \ / [ ] : ; | = , + * ? < > @ " or spaces.
JOIN_USER = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,19}")
BACKENDS = ("rid", "ad", "autorid")
ID_MAX = 2**31 - 1  # ids above it are negative to some tools (NFS, tar)
LOCAL_MAX = 60000  # login.defs UID_MAX on Debian: the ids local accounts take


@dataclass(frozen=True)
class IdRange:
    low: int
    high: int

    def overlaps(self, other: "IdRange") -> bool:
        return self.low <= other.high and other.low <= self.high

    def __str__(self) -> str:
        return f"{self.low}-{self.high}"


@dataclass
class JoinSpec:
    """What an admin gives to join: the realm (AD.EXAMPLE.COM), the domain's NetBIOS name (EXAMPLE), a DC to talk
    to (empty: found through DNS), the idmap backend and its ranges (the default one for well-known SIDs and, for
    rid and ad, the domain's; autorid has one range it splits per domain)."""

    realm: str
    workgroup: str
    dc: str = ""
    backend: str = "rid"
    default_range: IdRange = field(default_factory=lambda: IdRange(100000, 199999))
    domain_range: IdRange = field(default_factory=lambda: IdRange(200000, 2199999))
    autorid_rangesize: int = 100000


def normal(spec: JoinSpec) -> JoinSpec:
    """The spec as written into files: realm and workgroup upper-case, the DC lower-case."""
    return JoinSpec(
        realm=spec.realm.strip().upper(),
        workgroup=spec.workgroup.strip().upper(),
        dc=spec.dc.strip().lower(),
        backend=spec.backend,
        default_range=spec.default_range,
        domain_range=spec.domain_range,
        autorid_rangesize=spec.autorid_rangesize,
    )


def check_join(spec: JoinSpec, *, local_ids: set[int] = frozenset(), local_max: int = LOCAL_MAX) -> JoinSpec:
    """The spec, normalised, or InvalidShare naming each field that is wrong. local_ids: the uids and gids local
    accounts and groups have now; local_max: login.defs' UID_MAX/GID_MAX (the larger)."""
    problems: dict[str, str] = {}
    raw_realm = spec.realm.strip()
    if raw_realm.endswith("."):
        problems["realm"] = "The realm without its trailing dot (AD.EXAMPLE.COM)"
    elif len(raw_realm) > 253 or not REALM.fullmatch(raw_realm):
        problems["realm"] = "A DNS domain of two or more labels, letters, digits and -, such as AD.EXAMPLE.COM"
    if not WORKGROUP.fullmatch(spec.workgroup.strip()):
        problems["workgroup"] = "The domain's NetBIOS name: 1-15 letters, digits, _ or - (such as EXAMPLE)"
    dc = spec.dc.strip()
    if dc and not (IPV4.fullmatch(dc) or (len(dc) <= 253 and HOSTNAME.fullmatch(dc))):
        problems["dc"] = "A domain controller's host name or IPv4 address, or empty to find one through DNS"
    if spec.backend not in BACKENDS:
        problems["backend"] = f"One of {', '.join(BACKENDS)}"
    else:
        problems.update(_range_problems(spec, local_ids, local_max))
    if problems:
        raise InvalidShare(problems)
    return normal(spec)


def _range_problems(spec: JoinSpec, local_ids: set[int], local_max: int) -> dict[str, str]:
    problems: dict[str, str] = {}
    named = {"default_range": spec.default_range}
    if spec.backend == "autorid":
        if not 2000 <= spec.autorid_rangesize <= 10_000_000:
            problems["autorid_rangesize"] = "2,000 to 10,000,000 ids per domain"
        elif (spec.default_range.high - spec.default_range.low + 1) < 2 * spec.autorid_rangesize:
            problems["default_range"] = "autorid needs room for at least two range sizes (its own and a domain's)"
    else:
        named["domain_range"] = spec.domain_range
    for key, r in named.items():
        if key in problems:
            continue
        if not 0 < r.low < r.high <= ID_MAX:
            problems[key] = f"A low and a high id, low below high, at most {ID_MAX:,}"
        elif r.low <= local_max:
            problems[key] = f"Starts above {local_max:,}: local accounts take ids up to there (login.defs)"
        else:
            taken = sorted(i for i in local_ids if r.low <= i <= r.high)
            if taken:
                problems[key] = f"Covers ids local accounts or groups already have ({', '.join(map(str, taken[:3]))})"
    if not problems and "domain_range" in named and spec.default_range.overlaps(spec.domain_range):
        problems["domain_range"] = f"Overlaps the default range ({spec.default_range}): each id maps one way only"
    return problems


# --- files -----------------------------------------------------------------------------------------------------
DIRECTORY_CONF = "/etc/samba/tarn/directory.conf"
KRB5_CONF = "/etc/krb5.conf"
NETBIOS = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]{0,14}")


def render_member(spec: JoinSpec, netbios_name: str) -> str:
    """The [global] settings of a member server (Samba merges them with smb.conf's, as Tarn's shares file):
    security = ads and the idmap of the chosen backend. Domain users get no shell and no home here: they are
    file owners and SMB users, not logins."""
    spec = check_join(spec)
    if not NETBIOS.fullmatch(netbios_name):
        raise InvalidShare({"netbios_name": "This host's name as the domain will know it: 1-15 letters, digits or -"})
    wg = spec.workgroup
    lines = [
        HEADER.rstrip(),
        "[global]",
        "   server role = member server",  # Debian's smb.conf says standalone server, before Tarn's include
        "   security = ads",
        f"   realm = {spec.realm}",
        f"   workgroup = {wg}",
        f"   netbios name = {netbios_name.upper()}",
        "   template shell = /usr/sbin/nologin",
        "   template homedir = /nonexistent",
        "   winbind use default domain = no",
        "   winbind enum users = no",
        "   winbind enum groups = no",
        "   winbind refresh tickets = no",
        # A domain of 10,000 users took winbind 68-92 s to list in the lab (LDAP, paged, emulated): past the default
        # 60 s the asking wbinfo is dropped, and winbind then answered an empty list until restarted.
        "   winbind request timeout = 300",
    ]
    if spec.backend == "autorid":
        lines += [
            "   idmap config * : backend = autorid",
            f"   idmap config * : range = {spec.default_range}",
            f"   idmap config * : rangesize = {spec.autorid_rangesize}",
        ]
    else:
        lines += [
            "   idmap config * : backend = tdb",
            f"   idmap config * : range = {spec.default_range}",
            f"   idmap config {wg} : backend = {spec.backend}",
            f"   idmap config {wg} : range = {spec.domain_range}",
        ]
        if spec.backend == "ad":
            lines += [f"   idmap config {wg} : schema_mode = rfc2307", f"   idmap config {wg} : unix_nss_info = no"]
    return "\n".join(lines) + "\n"


def render_krb5(spec: JoinSpec) -> str:
    """/etc/krb5.conf for a member: the realm, its KDCs found through DNS (Samba pins the DC it uses in a file of
    its own; this one serves kinit and klist)."""
    spec = check_join(spec)
    return (
        f"{HEADER}[libdefaults]\n    default_realm = {spec.realm}\n    dns_lookup_realm = false\n"
        "    dns_lookup_kdc = true\n"
    )


def with_winbind(nsswitch: str) -> str:
    return nss_with(nsswitch, "winbind")


def without_winbind(nsswitch: str) -> str:
    return nss_without(nsswitch, "winbind")


def local_ids(passwd: str, group: str) -> set[int]:
    """The uids and gids of local accounts and groups (`getent -s files passwd` / `group` lines)."""
    ids = set()
    for text, column in ((passwd, 2), (group, 2)):
        for line in text.splitlines():
            fields = line.split(":")
            if len(fields) > column and fields[column].isascii() and fields[column].isdigit():
                ids.add(int(fields[column]))
    return ids


def local_max(login_defs: str) -> int:
    """The highest id useradd/groupadd hand out (login.defs UID_MAX and GID_MAX, the larger; Debian's 60000 when
    unset)."""
    found = []
    for line in login_defs.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] in ("UID_MAX", "GID_MAX") and parts[1].isascii() and parts[1].isdigit():
            found.append(int(parts[1]))
    return max(found, default=LOCAL_MAX)


# --- commands --------------------------------------------------------------------------------------------------
class DirectoryError(HostError):
    """The domain refused or did not answer; the message is the tool's own last words (checked for control
    characters: a DC's reply is hostile input)."""


def check_join_account(user: str, password: str) -> None:
    """The account that joins (or leaves): its name as the form took it, a password Samba reads from stdin
    (PASSWD_FD: a 128-byte buffer, so at most 127 characters, one line)."""
    problems = {}
    if not JOIN_USER.fullmatch(user):
        problems["username"] = "An account name of the domain: 1-20 letters, digits, . _ or - (such as Administrator)"
    if not 1 <= len(password.encode()) <= 127 or any(c in password for c in "\n\r\x00"):
        problems["password"] = "1 to 127 bytes (UTF-8), on one line"
    if problems:
        raise InvalidShare(problems)


def _options(spec: JoinSpec) -> list[str]:
    """What net needs to talk to the domain before smb.conf says it: the realm and workgroup as options, and the DC
    when one was given (else DNS SRV records find one)."""
    argv = [f"--option=realm={spec.realm}", f"--option=workgroup={spec.workgroup}", "--option=security=ads"]
    return argv + (["-S", spec.dc] if spec.dc else [])


# What net says on stderr when it asks the fd for a password again (once per credentials object it makes) and finds
# stdin at its end: noise, never the answer.
_NOISE = ("Error reading password from file descriptor",)


def _said(result, *, answers: tuple[str, ...] = ()) -> str:
    """What a tool said, printable characters only (a DC's words are hostile input): the first line starting with
    one of answers (net prints `Joined …` or `Failed to join domain: …` on stdout, warnings after it), else the last
    line of stderr or stdout that is not noise."""
    lines = [
        "".join(c for c in line.strip() if c.isprintable())[:300]
        for text in (result.stdout, result.stderr)
        for line in text.splitlines()
        if line.strip() and not line.strip().startswith(_NOISE)
    ]
    for line in lines:
        if line.startswith(answers) and answers:
            return line
    stderr = [line for line in result.stderr.splitlines() if line.strip() and not line.strip().startswith(_NOISE)]
    last = stderr[-1] if stderr else (lines[-1] if lines else "")
    return "".join(c for c in last.strip() if c.isprintable())[:300] or f"exit status {result.returncode}"


@dataclass
class AdsInfo:
    ldap_server: str
    ldap_server_name: str
    realm: str
    server_time: int  # epoch seconds, the DC's clock
    offset: int | None  # the DC's clock minus this host's, seconds (None: unknown)
    password_changed: int  # epoch seconds of the machine password's last change (0: never, not joined)


def parse_ads_info(text: str) -> AdsInfo:
    """`net ads info --json`: the DC that answered, its clock and the machine password's age."""
    try:
        raw = json.loads(text)
    except ValueError:
        raise DirectoryError("net ads info did not print JSON") from None
    if not isinstance(raw, dict):
        raise DirectoryError("net ads info did not print a JSON object")

    def text_of(key: str) -> str:
        value = raw.get(key, "")
        return "".join(c for c in value if c.isprintable())[:255] if isinstance(value, str) else ""

    def number(key: str) -> int:
        value = raw.get(key, 0)
        return value if isinstance(value, int) and not isinstance(value, bool) else 0

    return AdsInfo(
        ldap_server=text_of("LDAP server"),
        ldap_server_name=text_of("LDAP server name"),
        realm=text_of("Realm"),
        server_time=number("Server time"),
        offset=number("Server time offset"),
        password_changed=number("Last machine account password change"),
    )


def ads_info(t: Transport, spec: JoinSpec) -> AdsInfo:
    """Ask the domain (anonymously: CLDAP and the DC's rootDSE) who answers and what time it is there."""
    spec = check_join(spec)
    result = asked(t, ["net", "ads", "info", "--json", *_options(spec)], 60)
    if result.returncode != 0:
        raise DirectoryError(f"No domain controller of {spec.realm} answered: {_said(result)}")
    info = parse_ads_info(result.stdout)
    now = host_clock(t)
    # The DC's time against this host's own clock: net's offset read 0 on a member whose clock had moved (seen once
    # in the lab); without the DC's time the offset is unknown (None), never taken for 0.
    if not info.server_time:
        info.offset = None
    elif now:
        info.offset = info.server_time - now
    return info


def host_clock(t: Transport) -> int | None:
    """The host's clock, seconds since the epoch (None when it does not say)."""
    result = t.run(["date", "+%s"], check=False, timeout=30)
    text = result.stdout.strip()
    return int(text) if result.returncode == 0 and text.isascii() and text.isdigit() else None


def join(t: Transport, spec: JoinSpec, user: str, password: str) -> str:
    """net ads join with the account's password on stdin (PASSWD_FD=0: never argv, no prompt); smb.conf must say
    security = ads and the realm by now. Returns net's words."""
    spec = check_join(spec)
    check_join_account(user, password)
    argv = ["net", "ads", "join", "-U", user, *(["-S", spec.dc] if spec.dc else [])]
    result = t.run(argv, env={"PASSWD_FD": "0"}, input=password + "\n", check=False, mutating=True, timeout=300)
    if result.returncode != 0:
        raise DirectoryError(f"The domain refused the join: {_said(result, answers=('Failed to join',))}")
    return _said(result, answers=("Joined",))


def leave(t: Transport, user: str, password: str) -> str:
    """net ads leave: the machine account is deleted on the DC (the account needs the right to)."""
    check_join_account(user, password)
    argv = ["net", "ads", "leave", "-U", user]
    result = t.run(argv, env={"PASSWD_FD": "0"}, input=password + "\n", check=False, mutating=True, timeout=300)
    if result.returncode != 0:
        raise DirectoryError(f"Leaving the domain failed: {_said(result, answers=('Failed to leave',))}")
    return _said(result, answers=("Deleted account", "Disabled account"))


def testjoin(t: Transport) -> tuple[bool, str]:
    """net ads testjoin: whether the machine account still works (Join is OK), and the words either way."""
    result = asked(t, ["net", "ads", "testjoin"])
    return result.returncode == 0 and "Join is OK" in result.stdout, _said(result, answers=("Join",))


def trust_ok(t: Transport) -> tuple[bool, str]:
    """wbinfo -t: winbind's secure channel to a DC (the trust secret checked over RPC)."""
    result = asked(t, ["wbinfo", "-t"])
    said = _said(result, answers=("wbcCheckTrustCredentials", "failed to call"))
    return result.returncode == 0 and "succeeded" in result.stdout, said


def winbind_answers(t: Transport) -> tuple[bool, str]:
    """wbinfo -p: winbindd is running and answers (before any question about the domain)."""
    result = asked(t, ["wbinfo", "-p"])
    return result.returncode == 0 and "succeeded" in result.stdout, _said(result, answers=("Ping",))


def netbios_name(t: Transport) -> str:
    """This host's name as the domain will know it (NAME$): /etc/hostname's first label, upper case, cut to 15."""
    name = current(t, "/etc/hostname").strip().split(".")[0][:15].upper()
    if not NETBIOS.fullmatch(name):
        raise InvalidShare({"netbios_name": f"This host's name ({name[:20]!r}) cannot be a NetBIOS name: rename it"})
    return name


# A name Tarn takes from the domain into its own rows and, later, into smb.conf: printable, no separators or
# quotes that would change how a list or a line reads.
ACCOUNT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9 ._$-]{0,63}")


def parse_names(text: str, workgroup: str) -> tuple[list[str], int]:
    """`wbinfo -u` / `wbinfo -g`: the accounts of workgroup (DOMAIN\\name lines; winbind lower-cases the name), and
    how many lines were left out (another domain, or a name Tarn would not write into a config file)."""
    prefix = workgroup.upper() + "\\"
    names, left_out = [], 0
    for line in text.splitlines():
        if not line.strip():
            continue
        domain, sep, name = line.partition("\\")
        if sep and (domain + sep).upper() == prefix and ACCOUNT_NAME.fullmatch(name):
            names.append(name)
        else:
            left_out += 1
    return sorted(set(names)), left_out


def domain_names(t: Transport, workgroup: str, *, groups: bool = False) -> tuple[list[str], int]:
    result = t.run(["wbinfo", "-g" if groups else "-u"], check=False, timeout=300, max_output=64 << 20)
    what = "groups" if groups else "users"
    if result.returncode != 0:
        raise DirectoryError(f"winbind did not list the domain's {what}: {_said(result)}")
    if not result.stdout.strip():  # a domain has its Administrator and Domain Users at least
        raise DirectoryError(
            f"winbind listed no {what} at all: it may be stuck after a listing that took too long "
            "(systemctl restart winbind on the NAS); Tarn's list is kept as it was"
        )
    return parse_names(result.stdout, workgroup)


def domain_accounts(t: Transport, workgroup: str) -> tuple[list[str], list[str], int]:
    """`wbinfo -u` and `wbinfo -g` side by side (two commands over one SSH master: the second one's start no longer
    waits for the first's 10,000 lines): (users, groups, lines left out)."""
    with ThreadPoolExecutor(2) as pool:
        users = pool.submit(domain_names, t, workgroup)
        groups = pool.submit(domain_names, t, workgroup, groups=True)
        (found_users, left_users), (found_groups, left_groups) = users.result(), groups.result()
    return found_users, found_groups, left_users + left_groups


# --- the member's configuration --------------------------------------------------------------------------------
DIRECTORY_INCLUDE = f"include = {DIRECTORY_CONF}"
EMPTY = HEADER + "# Not joined to a domain.\n"


@dataclass
class Before:
    """The files as they were before a join, to put back when it fails."""

    directory_conf: str
    smb_conf: str
    krb5_conf: str


def member_prepare(t: Transport, spec: JoinSpec, netbios_name: str) -> Before:
    """What a join needs before `net ads join`: the member file (checked by testparm first), the include line in
    smb.conf, krb5.conf. Returns what was there, for member_restore."""
    text, krb5 = render_member(spec, netbios_name), render_krb5(spec)
    samba.testparm_check(t, text)
    before = Before(
        directory_conf=current(t, DIRECTORY_CONF), smb_conf=t.read_file(samba.SMB_CONF), krb5_conf=current(t, KRB5_CONF)
    )
    try:
        t.write_file(DIRECTORY_CONF, text)
        t.write_file(samba.SMB_CONF, with_include(before.smb_conf))
        t.write_file(KRB5_CONF, krb5)
    except HostError:
        member_restore(t, before)  # a write refused half-way leaves none of them
        raise
    return before


def with_include(smb_conf: str) -> str:
    """smb.conf with the member file's include line at the end of its [global] section, before the first share:
    net and winbindd read only the global section (lp_load_global stops at the first share's header), so an
    include at the end of the file, after [homes] or [printers], would never reach them."""
    lines = smb_conf.splitlines()
    if any(line.strip() == DIRECTORY_INCLUDE for line in lines):
        return smb_conf
    block = [
        "",
        "# Added by Tarn: its directory (domain) settings, in the global section for net and winbind.",
        DIRECTORY_INCLUDE,
    ]
    section, at, seen_global = "", len(lines), False
    for i, line in enumerate(lines):
        header = re.fullmatch(r"\s*\[([^\]]*)\]\s*", line)
        if header:
            name = header.group(1).strip().lower()
            if section == "global" and name != "global":
                at = i
                break
            section, seen_global = name, seen_global or name == "global"
    if not seen_global:
        return smb_conf.rstrip("\n") + "\n" + "\n".join(["", "[global]", *block[1:]]) + "\n"
    while at > 0 and (not lines[at - 1].strip() or lines[at - 1].lstrip().startswith(("#", ";"))):
        at -= 1  # before the comments that introduce the next section
    return "\n".join([*lines[:at], *block, *lines[at:]]) + "\n"


def member_restore(t: Transport, before: Before) -> None:
    """The files as they were (a join that failed leaves nothing of itself)."""
    t.write_file(DIRECTORY_CONF, before.directory_conf or EMPTY)
    t.write_file(samba.SMB_CONF, before.smb_conf)
    put_back(t, KRB5_CONF, before.krb5_conf)
    t.run(samba.SMB_RELOAD, mutating=True, check=False, timeout=30)


MEMBER_TOOLS = ("net", "wbinfo", "winbindd")


def member_tools_missing(t: Transport) -> list[str]:
    """The Samba member's programs this host lacks (Debian: samba, winbind, libnss-winbind, krb5-user)."""
    return tools_missing(t, MEMBER_TOOLS)


def winbind_on(t: Transport, *, reload: bool = True) -> None:
    """winbind in nsswitch (domain users become file owners), started now and at boot; smbd reloads the member
    settings (reload=False: the caller's next step reloads it, ~18 s under emulation each)."""
    nsswitch = t.read_file(NSSWITCH)
    t.write_file(NSSWITCH, with_winbind(nsswitch))
    t.run(["systemctl", "enable", "--now", "winbind"], mutating=True, timeout=90)
    if reload:
        t.run(samba.SMB_RELOAD, mutating=True, check=False, timeout=30)


def winbind_off(t: Transport) -> None:
    """After leaving: winbind stopped and off at boot, out of nsswitch, the member file emptied, smbd reloaded."""
    t.run(["systemctl", "disable", "--now", "winbind"], mutating=True, check=False, timeout=90)
    t.write_file(NSSWITCH, without_winbind(t.read_file(NSSWITCH)))
    t.write_file(DIRECTORY_CONF, EMPTY)
    t.run(samba.SMB_RELOAD, mutating=True, check=False, timeout=30)


def host_ids(t: Transport) -> tuple[set[int], int]:
    """The ids local accounts and groups have now, and the highest useradd hands out (for check_join)."""
    passwd = t.run(["getent", "-s", "files", "passwd"], check=False, timeout=30).stdout
    group = t.run(["getent", "-s", "files", "group"], check=False, timeout=30).stdout
    return local_ids(passwd, group), local_max(current(t, "/etc/login.defs"))
