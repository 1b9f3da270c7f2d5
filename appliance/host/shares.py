"""SMB (Samba) and NFS (kernel nfsd) configuration Tarn owns: rendered from plain specs, every value checked
against a strict pattern first (share parameters are a classic injection surface), validated by the real tools,
written atomically, reloaded; on any failure the previous file goes back and stays live.

Files: /etc/samba/tarn/shares.conf (pulled into smb.conf by one include line Tarn appends once),
/etc/exports.d/tarn.exports, /etc/nfs.conf.d/tarn.conf. Tarn never edits anything else in admin-written config.
"""

import re
from dataclasses import dataclass, field

from appliance.host.errors import HostError, last_line
from appliance.host.runner import Transport

SMB_CONF = "/etc/samba/smb.conf"
SMB_INCLUDE = "/etc/samba/tarn/shares.conf"
NFS_EXPORTS = "/etc/exports.d/tarn.exports"
NFS_CONF = "/etc/nfs.conf.d/tarn.conf"
HEADER = "# Written by Tarn from its database; edits here are replaced on the next apply.\n"


class InvalidShare(ValueError):
    """Field → problem for every value that may not go into a config file."""

    def __init__(self, problems: dict[str, str]):
        self.problems = problems
        super().__init__("; ".join(f"{k}: {v}" for k, v in problems.items()))


# --- values ------------------------------------------------------------------------------------------
SHARE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,79}$")  # no spaces, brackets, %, $ or separators
RESERVED_SHARES = {"global", "homes", "printers", "print$", "ipc$"}
USER = re.compile(r"^@?[a-z_][a-z0-9_.-]{0,31}$")
HOST_PATTERN = re.compile(r"^(?:[0-9]{1,3}(?:\.[0-9]{1,3}){0,3}\.?(?:/[0-9]{1,2})?|[0-9a-fA-F:]+(?:/[0-9]{1,3})?|"
                          r"[A-Za-z0-9][A-Za-z0-9.-]{0,252}|ALL|EXCEPT)$")  # fmt: skip
PATH = re.compile(r"^/[A-Za-z0-9_.:/+-]*$")
TEXT = re.compile(r"^[^\n\r\\\[\]%$;#\x00-\x1f]*$")
NFS_CLIENT = re.compile(r"^(?:\*|[0-9]{1,3}(?:\.[0-9]{1,3}){3}(?:/[0-9]{1,2})?|[0-9a-fA-F:]+(?:/[0-9]{1,3})?|"
                        r"[A-Za-z0-9*?][A-Za-z0-9*?.-]{0,252}|@[A-Za-z0-9_.-]{1,64})$")  # fmt: skip


def _check_path(path: str, problems: dict, key: str = "path") -> None:
    if not PATH.fullmatch(path) or "/../" in path + "/" or "/./" in path + "/" or "//" in path:
        problems[key] = "An absolute path of letters, digits and _ . : + - / (no .., no spaces)"
    elif "/.zfs" in path:
        problems[key] = "Snapshots (.zfs) are shared through Previous Versions, not as a path"


def _text(value: str, key: str, problems: dict, limit: int = 255) -> None:
    if len(value) > limit or not TEXT.fullmatch(value):
        problems[key] = f"Up to {limit} characters, without newlines, backslashes, brackets, %, $, ; or #"


def _words(value: list[str], pattern: re.Pattern, key: str, problems: dict, what: str) -> None:
    bad = [v for v in value if not pattern.fullmatch(v)]
    if bad:
        problems[key] = f"Not {what}: {', '.join(bad[:3])}"


# --- SMB -------------------------------------------------------------------------------------------------
PRESETS = {
    # Each preset is a documented set of parameters (see the README's Shares section).
    "general": {},
    "multi_user": {"inherit permissions": "yes", "create mask": "0664", "directory mask": "2775"},
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
    _check_path(share.path, problems)
    _text(share.comment, "comment", problems)
    if share.preset not in PRESETS:
        problems["preset"] = f"One of {', '.join(PRESETS)}"
    _words(share.valid_users, USER, "valid_users", problems, "user or @group names")
    _words(share.hosts_allow, HOST_PATTERN, "hosts_allow", problems, "addresses, networks or host names")
    _words(share.hosts_deny, HOST_PATTERN, "hosts_deny", problems, "addresses, networks or host names")
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
    _text(g.server_string, "server_string", problems, 64)
    if problems:
        raise InvalidShare(problems)


def _yes(value: bool) -> str:
    return "yes" if value else "no"


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
    ]
    for share in sorted(shares, key=lambda s: s.name.lower()):
        params = {
            "path": share.path + ("/%U" if share.preset == "private" else ""),
            "comment": share.comment,
            "read only": _yes(share.read_only),
            "browseable": _yes(share.browseable),
            "guest ok": _yes(share.guest_ok),
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
            params["valid users"] = " ".join(share.valid_users)
        if share.hosts_allow:
            params["hosts allow"] = " ".join(share.hosts_allow)
        if share.hosts_deny:
            params["hosts deny"] = " ".join(share.hosts_deny)
        lines += ["", f"[{share.name}]"] + [f"   {k} = {v}" for k, v in params.items() if v != ""]
    return "\n".join(lines) + "\n"


INCLUDE_LINE = f"include = {SMB_INCLUDE}"


def _has_include(smb_conf: str) -> bool:
    return any(raw.strip() == INCLUDE_LINE for raw in smb_conf.splitlines())


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


MISSING_MODULES_SCRIPT = """
import os, sys
print(" ".join(m for m in sys.argv[2:] if not os.path.exists(os.path.join(sys.argv[1], "vfs", m + ".so"))))
"""


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
    out = t.run(["python3", "-c", MISSING_MODULES_SCRIPT, match.group(1), *sorted(modules)], timeout=30).stdout
    return out.split()


def _current(t: Transport, path: str) -> str:
    return t.run(["cat", "--", path], check=False).stdout


def apply_smb(t: Transport, text: str) -> bool:
    """Validate the candidate with testparm, write it atomically, reload smbd; restore the old file on failure.

    Every step is a command on the host (~0.3 s each on the emulated lab guest, ~1 s for a remote python3), so
    the candidate reaches testparm on stdin rather than through a file, and only VFS modules the live file does
    not already use are looked up."""
    old, smb_conf = _current(t, SMB_INCLUDE), t.read_file(SMB_CONF)
    if old == text and _has_include(smb_conf):
        return False
    result = t.run(["testparm", "-s", "--suppress-prompt", "--", "/dev/stdin"], input=text, check=False, timeout=60)
    problems = testparm_problems(result.stderr)
    if result.returncode != 0 or problems:
        raise ConfigRejected("testparm", problems or [result.stderr.strip()[-300:]])
    missing = missing_vfs_modules(t, vfs_modules(text) - vfs_modules(old))
    if missing:
        raise ConfigRejected(
            "smbd", [f"Samba VFS module {', '.join(missing)} is not installed (Debian: apt install samba-vfs-modules)"]
        )
    if ensure_smb_include(t, smb_conf, text):
        t.run(SMB_RELOAD, mutating=True, timeout=30)
        return True
    return _replace_and_reload(t, SMB_INCLUDE, text, SMB_RELOAD, timeout=30, old=old)


SMB_RELOAD = ["smbcontrol", "smbd", "reload-config"]


def _replace_and_reload(
    t: Transport,
    path: str,
    text: str,
    reload: list[str],
    *,
    timeout: float,
    old: str | None = None,
    stderr_fails: bool = False,
) -> bool:
    """Write path if its content differs, then reload; if the reload fails (or, with stderr_fails, says anything),
    put the old file back, reload that, and raise. True if the file changed."""
    old = _current(t, path) if old is None else old
    if old == text or not t.write_file(path, text):
        return False
    result = t.run(reload, mutating=True, check=False, timeout=timeout)
    problems = [line.strip() for line in result.stderr.splitlines() if line.strip()] if stderr_fails else []
    if result.returncode != 0 or problems:
        t.write_file(path, old)
        t.run(reload, mutating=True, check=False, timeout=timeout)
        raise ConfigRejected(reload[0], problems or [last_line(result.stderr) or f"exit status {result.returncode}"])
    return True


class ConfigRejected(HostError):
    def __init__(self, tool: str, problems: list[str]):
        self.problems = problems
        super().__init__(f"{tool} refused the new configuration: {'; '.join(problems)[:500]}")


# --- NFS -------------------------------------------------------------------------------------------------
SQUASH = ("root_squash", "all_squash", "no_root_squash")
SEC = ("sys", "krb5", "krb5i", "krb5p")


@dataclass
class NfsExportSpec:
    path: str
    clients: list[str]
    read_only: bool = False
    squash: str = "root_squash"
    anonuid: int | None = None
    anongid: int | None = None
    sec: str = "sys"
    async_writes: bool = False


@dataclass
class NfsGlobals:
    v3: bool = True
    v4: bool = True
    threads: int = 8


def check_nfs_export(export: NfsExportSpec) -> None:
    problems: dict[str, str] = {}
    _check_path(export.path, problems)
    if not export.clients:
        problems["clients"] = "At least one client: a host, a network (10.0.0.0/24) or *"
    _words(export.clients, NFS_CLIENT, "clients", problems, "host names, addresses, networks, @netgroups or *")
    if export.squash not in SQUASH:
        problems["squash"] = f"One of {', '.join(SQUASH)}"
    if export.sec not in SEC:
        problems["sec"] = f"One of {', '.join(SEC)}"
    for key in ("anonuid", "anongid"):
        value = getattr(export, key)
        if value is not None and not 0 <= value <= 4_294_967_294:
            problems[key] = "A numeric id from 0 to 4294967294"
    if problems:
        raise InvalidShare(problems)


def render_exports(exports: list[NfsExportSpec]) -> str:
    lines = [HEADER.rstrip()]
    seen = set()
    for export in sorted(exports, key=lambda e: e.path):
        check_nfs_export(export)
        if export.path in seen:
            raise InvalidShare({"path": f"{export.path} is exported twice: put both clients in one export"})
        seen.add(export.path)
        options = [
            "ro" if export.read_only else "rw",
            "async" if export.async_writes else "sync",
            export.squash,
            f"sec={export.sec}",
            "no_subtree_check",
        ]
        if export.anonuid is not None:
            options.append(f"anonuid={export.anonuid}")
        if export.anongid is not None:
            options.append(f"anongid={export.anongid}")
        opts = ",".join(options)
        lines.append(f'"{export.path}" ' + " ".join(f"{client}({opts})" for client in export.clients))
    return "\n".join(lines) + "\n"


def render_nfs_conf(g: NfsGlobals) -> str:
    if not 1 <= g.threads <= 256:
        raise InvalidShare({"threads": "From 1 to 256"})
    if not (g.v3 or g.v4):
        raise InvalidShare({"v4": "Leave at least one NFS version on"})
    y = {True: "y", False: "n"}
    return (
        f"{HEADER}[nfsd]\nthreads={g.threads}\nvers3={y[g.v3]}\nvers4={y[g.v4]}\nvers4.0=n\n"
        f"vers4.1={y[g.v4]}\nvers4.2={y[g.v4]}\n"
    )


def apply_exports(t: Transport, text: str) -> bool:
    """Write the exports file, re-export; if exportfs complains, put the old file back and re-export that."""
    return _replace_and_reload(t, NFS_EXPORTS, text, ["exportfs", "-ra"], timeout=60, stderr_fails=True)


def apply_nfs_conf(t: Transport, text: str) -> bool:
    return _replace_and_reload(t, NFS_CONF, text, ["systemctl", "restart", "nfs-server"], timeout=120)


# --- Samba users -------------------------------------------------------------------------------------------
SAMBA_USER = re.compile(r"^[a-z_][a-z0-9_-]{0,31}$")


def check_user(name: str) -> str:
    if not SAMBA_USER.fullmatch(name) or name in {"root", "nobody", "daemon", "bin", "sys"}:
        raise InvalidShare(
            {"username": "1-32 lower-case letters, digits, _ or -, starting with a letter; not a system account"}
        )
    return name


def check_password(password: str) -> str:
    if not 8 <= len(password) <= 128 or "\n" in password or "\r" in password or "\x00" in password:
        raise InvalidShare({"password": "8 to 128 characters, on one line"})
    return password


SHARED_GROUP = "users"  # Debian's group 100: every Samba user Tarn makes is in it; new share folders are 2775 to it


# Modes offered for a share's root folder: what each means for Samba users (who reach files as themselves).
FOLDER_MODES = {
    "2775": "group writes, others read; new files keep the group (setgid)",
    "2770": "group writes, others nothing; new files keep the group (setgid)",
    "0755": "owner writes, everyone else reads",
    "0750": "owner writes, group reads, others nothing",
    "0700": "owner only",
}


def folder_argv(path: str, owner: str, group: str, mode: str) -> list[str]:
    """Set a share's root folder owner, group and mode (not recursive: files keep theirs)."""
    problems: dict[str, str] = {}
    _check_path(path, problems)
    for key, value in (("owner", owner), ("group", group)):
        if not SAMBA_USER.fullmatch(value):  # the same rule as the local accounts Tarn makes
            problems[key] = "A local account name: lower-case letters, digits, _ and -, at most 32."
    if mode not in FOLDER_MODES:
        problems["mode"] = f"One of {', '.join(FOLDER_MODES)}."
    if problems:
        raise InvalidShare(problems)
    return ["install", "-d", "-m", mode, "-o", owner, "-g", group, "--", path]


def group_folder_argv(path: str) -> list[str]:
    """A share's root folder that every Samba user may write (setgid: new files stay in the shared group)."""
    return folder_argv(path, "root", SHARED_GROUP, "2775")


def folder_owner(t: Transport, path: str) -> str:
    """`owner:group mode` of a folder, as stat prints it (e.g. `root:users 2775`)."""
    return t.run(["stat", "-c", "%U:%G %a", "--", path], timeout=30).stdout.strip()


def user_add(t: Transport, name: str, password: str) -> None:
    """A local account without a shell or home for file ownership (in the shared group), then its Samba password
    (stdin, never argv)."""
    check_user(name)
    check_password(password)
    if t.run(["id", "-u", "--", name], check=False).returncode != 0:
        t.run(
            ["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", "-G", SHARED_GROUP, "--", name],
            mutating=True,
        )
    t.run(["smbpasswd", "-a", "-s", "--", name], input=f"{password}\n{password}\n", mutating=True)
    t.run(["smbpasswd", "-e", "--", name], mutating=True)


def user_password(t: Transport, name: str, password: str) -> None:
    check_user(name)
    check_password(password)
    t.run(["smbpasswd", "-s", "--", name], input=f"{password}\n{password}\n", mutating=True)


def user_enable(t: Transport, name: str, enabled: bool) -> None:
    check_user(name)
    t.run(["smbpasswd", "-e" if enabled else "-d", "--", name], mutating=True)


def user_delete(t: Transport, name: str) -> None:
    check_user(name)
    t.run(["smbpasswd", "-x", "--", name], mutating=True, check=False)
    t.run(["userdel", "--", name], mutating=True, check=False)


def user_dir(t: Transport, base: str, name: str) -> None:
    """The private preset's per-user directory: <share path>/<user>, owned by the user, mode 0700."""
    check_user(name)
    problems: dict[str, str] = {}
    _check_path(base, problems)
    if problems:
        raise InvalidShare(problems)
    t.run(["install", "-d", "-m", "0700", "-o", name, "-g", name, "--", f"{base}/{name}"], mutating=True)


def parse_pdbedit(text: str) -> dict[str, bool]:
    """`pdbedit -L -v`-free listing: `pdbedit -L -w` lines user:uid:lm:nt:[flags]:lct → user → enabled."""
    users = {}
    for line in text.splitlines():
        parts = line.split(":")
        if len(parts) >= 5:
            users[parts[0]] = "D" not in parts[4].strip("[] ")
    return users


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
    import json

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


NFS_CLIENTS_SCRIPT = """
import json, os
base = "/proc/fs/nfsd/clients"
infos = []
for entry in sorted(os.listdir(base)) if os.path.isdir(base) else []:
    try:
        infos.append(open(os.path.join(base, entry, "info")).read())
    except OSError:
        pass
try:
    rmtab = open("/var/lib/nfs/rmtab").read()
except OSError:
    rmtab = ""
print(json.dumps({"v4": infos, "rmtab": rmtab}))
"""


def parse_rmtab(text: str) -> list[dict]:
    """NFSv3 mounts from rpc.mountd's rmtab (`client:path:0xcount`, kept by MNT and UMNT; v4 does not use it).
    v3 itself is stateless: a client that went away without unmounting stays listed until it mounts again."""
    clients = []
    for line in text.splitlines():
        client, _, rest = line.strip().partition(":")  # mountd writes an IPv6 client's colons as ';'
        path, _, count = rest.rpartition(":")
        if not path.startswith("/") or not re.fullmatch(r"0x[0-9a-fA-F]+", count) or int(count, 16) == 0:
            continue
        clients.append({"address": client.replace(";", ":"), "name": path, "version": "3"})
    return clients


def parse_nfs_client_info(info: str) -> dict:
    """One /proc/fs/nfsd/clients/*/info (NFSv4 clients; v3 is stateless and has no entry)."""
    fields = {}
    for line in info.splitlines():
        key, _, value = line.partition(":")
        fields[key.strip()] = value.strip().strip('"')
    return {
        "address": fields.get("address", ""),
        "name": fields.get("name", ""),
        "version": f"4.{fields['minor version']}" if "minor version" in fields else "4",
    }


def status(t: Transport) -> tuple[list[SmbSession], list[dict]]:
    import json

    smb = t.run(["smbstatus", "-j"], timeout=30, check=False)
    sessions = parse_smbstatus(smb.stdout) if smb.returncode == 0 else []
    nfs = t.run(["python3", "-c", NFS_CLIENTS_SCRIPT], timeout=30, check=False)
    found = json.loads(nfs.stdout) if nfs.returncode == 0 and nfs.stdout.strip() else {"v4": [], "rmtab": ""}
    return sessions, [*(parse_nfs_client_info(i) for i in found["v4"]), *parse_rmtab(found["rmtab"])]
