"""Samba: the smb.conf include Tarn owns (/etc/samba/tarn/shares.conf, pulled into smb.conf by one include line
Tarn appends once), rendered from plain specs, checked by testparm, written atomically and reloaded; Samba
accounts; who is connected (smbstatus -j)."""

import json
import re
from dataclasses import dataclass, field

from hostlib import dfree_helper, posix
from hostlib.configfiles import (
    HEADER,
    HELPER_DIR,
    ConfigRejected,
    InvalidShare,
    check_path,
    check_text,
    check_words,
    current,
    install_sources,
    replace_and_reload,
)
from hostlib.errors import HostError
from hostlib.runner import Transport

SMB_CONF = "/etc/samba/smb.conf"
SMB_INCLUDE = "/etc/samba/tarn/shares.conf"
SHARE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,79}$")  # no spaces, brackets, %, $ or separators
RESERVED_SHARES = {"global", "homes", "printers", "print$", "ipc$"}
USER = re.compile(r"^@?[a-z_][a-z0-9_.-]{0,31}$")
# A domain's account in a list (valid users): WORKGROUP\name, @WORKGROUP\group; the name as winbind gives it, spaces
# inside ("Domain Users") but none at either end, and no quote, @, backslash or separator of Samba's lists.
DOMAIN_ACCOUNT = re.compile(
    r"^@?[A-Za-z0-9][A-Za-z0-9_-]{0,14}\\[A-Za-z0-9](?:[A-Za-z0-9 ._$-]{0,62}[A-Za-z0-9._$-])?$"
)
ACCOUNT = re.compile(f"{USER.pattern}|{DOMAIN_ACCOUNT.pattern}")
HOST_PATTERN = re.compile(
    r"^(?:[0-9]{1,3}(?:\.[0-9]{1,3}){0,3}\.?(?:/[0-9]{1,2})?|[0-9a-fA-F:]+(?:/[0-9]{1,3})?|"
    r"[A-Za-z0-9][A-Za-z0-9.-]{0,252}|ALL|EXCEPT)$"
)


# What a file or folder made over SMB gets: the folder's own permissions (a file its 0666 part, a folder all of it),
# so a default ACL decides as it does over NFS (a group-shared folder: files 0660, folders 2770; one without: 0644 and
# 0755 under a 0755 folder). With Samba's masks instead (0744, 0755) a default group::rwx gave files 740 (the lab).
# map archive off: the archive bit lives in the DOS attributes' xattr (store dos attributes), not as the owner's x.
# The private preset keeps its masks (owner only, whatever a folder says).
FOLLOW_FOLDER = {"inherit permissions": "yes", "map archive": "no"}

PRESETS = {
    # Each preset is a documented set of parameters (see the README's Shares section).
    "general": {},
    "multi_user": {},  # FOLLOW_FOLDER as general; a new dataset for it gets acltype=posix (shares.services)
    "time_machine": {
        "vfs objects": "catia fruit streams_xattr",
        "fruit:time machine": "yes",
        "fruit:metadata": "stream",
        "browseable": "yes",
    },
    "private": {"browseable": "no", "create mask": "0600", "directory mask": "0700"},
    "archive": {"read only": "yes"},
}
MIN_PROTOCOLS = {"SMB2": "SMB2_10", "SMB3": "SMB3_00"}
ENCRYPTION = ("default", "if_required", "desired", "required")
SIGNING = ("default", "auto", "mandatory")


@dataclass
class SmbGlobals:
    min_protocol: str = "SMB2"
    multichannel: bool = False
    encryption: str = "default"
    signing: str = "default"
    workgroup: str = "WORKGROUP"
    server_string: str = "Tarn NAS"


@dataclass
class SmbShareSpec:
    name: str
    path: str
    comment: str = ""
    preset: str = "general"
    read_only: bool = False
    browseable: bool = True
    guest_ok: bool = False
    valid_users: list[str] = field(default_factory=list)
    hosts_allow: list[str] = field(default_factory=list)
    hosts_deny: list[str] = field(default_factory=list)
    previous_versions: bool = True
    snapshot_prefix: str = "auto"  # Previous Versions show <prefix>-YYYY-MM-DD_HH-MM snapshots (Tarn's tasks)
    time_machine_quota: str = ""  # e.g. 500G, Time Machine preset only


def check_smb_share(share: SmbShareSpec) -> None:
    problems: dict[str, str] = {}
    if not SHARE_NAME.fullmatch(share.name) or share.name.lower() in RESERVED_SHARES:
        problems["name"] = "1-80 letters, digits, _ . - starting with a letter or digit; not global/homes/printers"
    check_path(share.path, problems)
    check_text(share.comment, "comment", problems)
    if share.preset not in PRESETS:
        problems["preset"] = f"One of {', '.join(PRESETS)}"
    check_words(
        share.valid_users, ACCOUNT, "valid_users", problems, "user or @group names (DOMAIN\\name for a domain's)"
    )
    if {"root", "@root"} & set(share.valid_users):
        problems["valid_users"] = "root may not be a share's user: root over SMB bypasses every permission"
    check_words(share.hosts_allow, HOST_PATTERN, "hosts_allow", problems, "addresses, networks or host names")
    check_words(share.hosts_deny, HOST_PATTERN, "hosts_deny", problems, "addresses, networks or host names")
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_-]{0,39}", share.snapshot_prefix):
        problems["snapshot_prefix"] = "Letters, digits, _ and - (a snapshot task's prefix)"
    if share.time_machine_quota and not re.fullmatch(r"[0-9]{1,6}[KMGT]", share.time_machine_quota):
        problems["time_machine_quota"] = "A size such as 500G or 2T"
    if share.guest_ok and share.valid_users:
        problems["guest_ok"] = "A guest share cannot also be limited to valid users"
    if problems:
        raise InvalidShare(problems)


def check_smb_globals(g: SmbGlobals) -> None:
    problems: dict[str, str] = {}
    if g.min_protocol not in MIN_PROTOCOLS:
        problems["min_protocol"] = "SMB2 or SMB3 (SMB1 is slow and unsafe and is never offered)"
    if g.encryption not in ENCRYPTION:
        problems["encryption"] = f"One of {', '.join(ENCRYPTION)}"
    if g.signing not in SIGNING:
        problems["signing"] = f"One of {', '.join(SIGNING)}"
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_-]{0,14}", g.workgroup):
        problems["workgroup"] = "1-15 letters, digits, _ or -"
    check_text(g.server_string, "server_string", problems, 64)
    if problems:
        raise InvalidShare(problems)


def domain_of(name: str) -> str:
    """The workgroup a valid-users entry names (LAB in @LAB\\staff), upper case; "" for a local user or group."""
    return name.lstrip("@").partition("\\")[0].upper() if "\\" in name else ""


def _listed(name: str) -> str:
    """One entry of a Samba list: a domain name with a space in it ("@LAB\\Domain Users") goes in double quotes,
    which Samba's list parser keeps as one entry; the patterns above allow no quote inside."""
    return f'"{name}"' if " " in name else name


def _yes(value: bool) -> str:
    return "yes" if value else "no"


MOUNTPOINT = "/usr/bin/mountpoint"


def mounted_guard(path: str) -> dict[str, str]:
    """smbd refuses a connection when root preexec exits non-zero (with root preexec close = yes): so a share whose
    dataset is locked or not mounted is refused instead of serving, and taking writes into, the empty folder it
    leaves on the parent filesystem. `path` is the dataset's mountpoint (a private share's %U folder is below it);
    --nofollow: a link planted where the folder was is refused, not taken for the mount it points to. smbd hands
    the command to /bin/sh; check_path allows no quote, $, ` or backslash, so double quotes keep the path one word."""
    return {"root preexec": f'{MOUNTPOINT} -q --nofollow "{path}"', "root preexec close": "yes"}


def render_smb(globals_: SmbGlobals, shares: list[SmbShareSpec]) -> str:
    """The include file: a [global] section (Samba merges it with smb.conf's) and one section per share."""
    check_smb_globals(globals_)
    seen: set[str] = set()
    for share in shares:
        check_smb_share(share)
        if share.name.lower() in seen:
            raise InvalidShare({"name": f"Two shares are named {share.name} (share names ignore case)"})
        seen.add(share.name.lower())
    lines = [
        HEADER.rstrip(),
        "[global]",
        f"   server min protocol = {MIN_PROTOCOLS[globals_.min_protocol]}",
        "   client min protocol = SMB2_10",
        f"   server multi channel support = {_yes(globals_.multichannel)}",
        f"   server smb encrypt = {globals_.encryption}",
        f"   server signing = {globals_.signing}",
        f"   workgroup = {globals_.workgroup}",
        f"   server string = {globals_.server_string}",
        "   map to guest = Bad User",
        # The share's size and free space as each user's quota leaves them (hostlib.dfree_helper), asked again after
        # 10 s at most, not at every directory listing.
        f"   dfree command = {DFREE}",
        "   dfree cache time = 10",
    ]
    for share in sorted(shares, key=lambda s: s.name.lower()):
        params = {
            "path": share.path + ("/%U" if share.preset == "private" else ""),
            "comment": share.comment,
            "read only": _yes(share.read_only),
            "browseable": _yes(share.browseable),
            "guest ok": _yes(share.guest_ok),
            **mounted_guard(share.path),
            **(FOLLOW_FOLDER if share.preset != "private" else {}),
        }
        vfs = []
        if share.previous_versions:
            vfs.append("shadow_copy2")
            params.update(
                {
                    "shadow:snapdir": ".zfs/snapshot",
                    "shadow:sort": "desc",
                    "shadow:format": f"{share.snapshot_prefix}-%Y-%m-%d_%H-%M",
                    "shadow:localtime": "no",
                }
            )
        preset = dict(PRESETS[share.preset])
        if preset.get("vfs objects"):
            vfs = [*preset.pop("vfs objects").split(), *vfs]
        params.update(preset)
        if share.preset == "private":
            params["valid users"] = "%U"
        if share.preset == "time_machine" and share.time_machine_quota:
            params["fruit:time machine max size"] = share.time_machine_quota
        if vfs:
            params["vfs objects"] = " ".join(vfs)
        if share.valid_users:
            params["valid users"] = " ".join(_listed(name) for name in share.valid_users)
        if share.hosts_allow:
            params["hosts allow"] = " ".join(share.hosts_allow)
        if share.hosts_deny:
            params["hosts deny"] = " ".join(share.hosts_deny)
        lines += ["", f"[{share.name}]"] + [f"   {k} = {v}" for k, v in params.items() if v != ""]
    return "\n".join(lines) + "\n"


INCLUDE_LINE = f"include = {SMB_INCLUDE}"


def _has_include(smb_conf: str) -> bool:
    return any(raw.strip() == INCLUDE_LINE for raw in smb_conf.splitlines())


DFREE = f"{HELPER_DIR}/tarn-dfree"


def install_dfree(t: Transport) -> bool:
    """tarn-dfree on the host (root's, 0755: smbd runs it as each user), rewritten only when it differs: before any
    smb.conf that names it is written (a dfree command that is missing makes every share look full)."""
    return install_sources(t, {DFREE: dfree_helper})


def ensure_smb_include(t: Transport, current: str, text: str) -> bool:
    """First apply on a host: write Tarn's file (already checked), then append the one include line that makes
    smbd read it to smb.conf. True if it did; False if smb.conf has the line already."""
    if _has_include(current):
        return False
    t.write_file(SMB_INCLUDE, text)
    t.write_file(
        SMB_CONF, current.rstrip("\n") + f"\n\n# Added by Tarn: its shares and SMB settings.\n{INCLUDE_LINE}\n"
    )
    return True


def testparm_problems(output: str) -> list[str]:
    """Lines of `testparm -s` stderr that mean the file is wrong (it exits 0 for some of them)."""
    bad = ("unknown parameter", "ignoring unknown", "error", "invalid", "not a valid", "doesn't exist")
    return [line.strip() for line in output.splitlines() if any(b in line.lower() for b in bad)]


def testparm_check(t: Transport, text: str) -> None:
    """testparm on a candidate file (on stdin, no file written): ConfigRejected with its problems if it finds any."""
    result = t.run(["testparm", "-s", "--suppress-prompt", "--", "/dev/stdin"], input=text, check=False, timeout=60)
    problems = testparm_problems(result.stderr)
    if result.returncode != 0 or problems:
        raise ConfigRejected("testparm", problems or [result.stderr.strip()[-300:]])


def vfs_modules(text: str) -> set[str]:
    return {
        m for line in text.splitlines() if line.strip().startswith("vfs objects") for m in line.split("=")[1].split()
    }


def missing_vfs_modules(t: Transport, modules: set[str]) -> list[str]:
    """testparm does not notice a VFS module that is not installed; smbd then refuses the share at connect."""
    if not modules:
        return []
    build = t.run(["smbd", "-b"], timeout=30).stdout
    match = re.search(r"^\s*MODULESDIR:\s*(\S+)", build, re.M)
    if not match:
        return []
    paths = {f"{match.group(1)}/vfs/{m}.so": m for m in sorted(modules)}
    found = t.run(["stat", "-c", "%n", "--", *paths], timeout=30, check=False).stdout.split("\n")
    return [m for path, m in paths.items() if path not in found]


def apply_smb(t: Transport, text: str) -> bool:
    """Validate the candidate with testparm, write it atomically, reload smbd; restore the old file on failure.

    Every step is a command on the host (~0.3 s each on the emulated lab guest, ~1 s for a remote python3), so
    the candidate reaches testparm on stdin rather than through a file, and only VFS modules the live file does
    not already use are looked up."""
    old, smb_conf = current(t, SMB_INCLUDE), t.read_file(SMB_CONF)
    if old == text and _has_include(smb_conf):
        return False
    testparm_check(t, text)
    install_dfree(t)
    missing = missing_vfs_modules(t, vfs_modules(text) - vfs_modules(old))
    if missing:
        raise ConfigRejected(
            "smbd", [f"Samba VFS module {', '.join(missing)} is not installed (Debian: apt install samba-vfs-modules)"]
        )
    if ensure_smb_include(t, smb_conf, text):
        t.run(SMB_RELOAD, mutating=True, timeout=30)
        return True
    return replace_and_reload(t, SMB_INCLUDE, text, SMB_RELOAD, timeout=30, old=old)


SMB_RELOAD = ["smbcontrol", "smbd", "reload-config"]


# --- Samba accounts -----------------------------------------------------------------------------------------
SAMBA_USER = posix.ACCOUNT
TARN_GROUP = "tarnsmb"  # every local account Tarn makes for a Samba user is in it; Tarn acts on no other account
SYSTEM_ACCOUNTS = frozenset(
    "root daemon bin sys sync games man lp mail news uucp proxy www-data backup list irc gnats nobody sshd messagebus "
    "_apt statd avahi ntp postfix postgres redis mysql dnsmasq tss uuidd tcpdump polkitd nfsnobody admin".split()
)


class NotTarnsAccount(HostError):
    """The name belongs to a local account Tarn did not make (a system or an admin's account)."""


def check_user(name: str) -> str:
    if not SAMBA_USER.fullmatch(name) or name in SYSTEM_ACCOUNTS or name.startswith(("systemd-", "_")):
        raise InvalidShare(
            {"username": "1-32 lower-case letters, digits, _ or -, starting with a letter; not a system account"}
        )
    return name


def account(t: Transport, name: str) -> tuple[bool, bool]:
    """(the local account exists, Tarn made it): Tarn's accounts are in TARN_GROUP."""
    result = t.run(["id", "-nG", "--", name], check=False)
    return result.returncode == 0, result.returncode == 0 and TARN_GROUP in result.stdout.split()


def check_password(password: str) -> str:
    if not 8 <= len(password) <= 128 or "\n" in password or "\r" in password or "\x00" in password:
        raise InvalidShare({"password": "8 to 128 characters, on one line"})
    return password


def user_add(t: Transport, name: str, password: str) -> None:
    """A local account without a shell or home for file ownership (in the shared group), then its Samba password
    (stdin, never argv)."""
    check_user(name)
    check_password(password)
    exists, ours = account(t, name)
    if exists and not ours:
        raise NotTarnsAccount(f"{name} is a local account Tarn did not make; choose another name")
    if not exists:
        t.run(["groupadd", "-f", "--", TARN_GROUP], mutating=True)
        groups = f"{posix.SHARED_GROUP},{TARN_GROUP}"
        t.run(["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", "-G", groups, "--", name], mutating=True)
    t.run(["smbpasswd", "-a", "-s", "--", name], input=f"{password}\n{password}\n", mutating=True)
    t.run(["smbpasswd", "-e", "--", name], mutating=True)


def user_password(t: Transport, name: str, password: str) -> None:
    check_user(name)
    check_password(password)
    _ours(t, name)
    t.run(["smbpasswd", "-s", "--", name], input=f"{password}\n{password}\n", mutating=True)


def user_enable(t: Transport, name: str, enabled: bool) -> None:
    check_user(name)
    _ours(t, name)
    t.run(["smbpasswd", "-e" if enabled else "-d", "--", name], mutating=True)


def _ours(t: Transport, name: str) -> None:
    if not account(t, name)[1]:
        raise NotTarnsAccount(f"{name} is not an account Tarn made; Tarn leaves it alone")


def user_delete(t: Transport, name: str) -> None:
    """The Samba entry and the local account, and only an account Tarn made (never userdel on anyone else's)."""
    check_user(name)
    _ours(t, name)
    t.run(["smbpasswd", "-x", "--", name], mutating=True, check=False)
    t.run(["userdel", "--", name], mutating=True)


# --- status ---------------------------------------------------------------------------------------------
@dataclass
class SmbSession:
    user: str
    machine: str
    protocol: str
    encryption: str
    shares: list[str]
    open_files: int


def parse_smbstatus(text: str) -> list[SmbSession]:
    """`smbstatus -j`: sessions with their tree connects (shares) and open files."""
    if not text.strip():
        return []
    raw = json.loads(text)
    sessions = {}
    for sid, s in (raw.get("sessions") or {}).items():
        sessions[sid] = SmbSession(
            user=s.get("username", ""),
            machine=s.get("remote_machine", "") or s.get("hostname", ""),
            protocol=s.get("session_dialect", ""),
            encryption=(s.get("encryption") or {}).get("cipher", "") or "-",
            shares=[],
            open_files=0,
        )
    for tcon in (raw.get("tcons") or {}).values():
        session = sessions.get(str(tcon.get("session_id")))
        if session is not None:
            session.shares.append(tcon.get("service", ""))
    for f in (raw.get("open_files") or {}).values():
        for opener in (f.get("opens") or {}).values():
            for session in sessions.values():
                if session.user and session.user == opener.get("username"):
                    session.open_files += 1
                    break
    return list(sessions.values())


def sessions(t: Transport) -> list[SmbSession]:
    result = t.run(["smbstatus", "-j"], timeout=30, check=False)
    return parse_smbstatus(result.stdout) if result.returncode == 0 else []


def close_share(t: Transport, name: str) -> None:
    """Disconnect every client from one share now (smbcontrol close-share); they may connect again later."""
    if not SHARE_NAME.fullmatch(name):
        raise ValueError(f"not a share name: {name!r}")
    t.run(["smbcontrol", "smbd", "close-share", name], timeout=30, mutating=True)
