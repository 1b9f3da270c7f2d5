"""NFS (kernel nfsd): /etc/exports.d/tarn.exports and /etc/nfs.conf.d/tarn.conf rendered from plain specs, every
value checked first, applied with exportfs (the old file goes back if it complains); who has mounted."""

import ipaddress
import re
from dataclasses import dataclass

from hostlib.configfiles import HEADER, InvalidShare, check_path, replace_and_reload
from hostlib.runner import Transport

NFS_EXPORTS = "/etc/exports.d/tarn.exports"
NFS_CONF = "/etc/nfs.conf.d/tarn.conf"
NETGROUP = re.compile(r"@[A-Za-z0-9_.-]{1,64}")
HOST_LABEL = re.compile(r"[A-Za-z0-9*?](?:[A-Za-z0-9*?-]{0,61}[A-Za-z0-9*?])?")
LOOKS_NUMERIC = re.compile(r"[0-9.]+(?:/.*)?|.*:.*")  # an address or network, never a host name
MIN_PREFIX = {4: 8, 6: 16}  # a network shorter than this is as good as everyone: it needs the same confirmation
MAX_CLIENTS = 256
NFSD_CLIENTS = "/proc/fs/nfsd/clients"
RMTAB = "/var/lib/nfs/rmtab"


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


@dataclass(frozen=True)
class Client:
    text: str  # as it goes into the exports file
    everyone: bool  # matches any host that can reach the server


def parse_client(value: str) -> Client:
    """One client of an export, read as exports(5) would: an address or network (ipaddress decides), a @netgroup,
    or a host name whose labels may hold * and ?. Raises ValueError saying what is wrong."""
    if not value or len(value) > 253:
        raise ValueError("empty or longer than 253 characters")
    if NETGROUP.fullmatch(value):
        return Client(value, False)
    if set(value) <= set("*?.") and set(value) & set("*?"):  # *, **, ?*, *.* …: every host name matches
        return Client("*", True)
    if "%" in value:  # an IPv6 zone names a link of the machine reading it; exports(5) has no use for one
        raise ValueError(f"{value} has an IPv6 zone (%…): write the address or network without it")
    if LOOKS_NUMERIC.fullmatch(value):
        try:
            typed = ipaddress.ip_interface(value)
        except ValueError:
            raise ValueError(f"{value} is not an address or a network (a.b.c.d, a.b.c.d/len, IPv6)") from None
        network = typed.network
        if network.prefixlen == 0 and not typed.ip.is_unspecified:
            raise ValueError(f"{value} matches every address: write * (which needs the confirmation)")
        text = str(network) if "/" in value else str(network.network_address)
        return Client(text, network.prefixlen < MIN_PREFIX[network.version])
    labels = value.split(".")
    if not all(HOST_LABEL.fullmatch(label) for label in labels):
        raise ValueError(f"{value} is not a host name (letters, digits, - and the wildcards * ?), address or @netgroup")
    return Client(value, False)


def export_risks(export: NfsExportSpec) -> set[str]:
    """What an admin must confirm before this export is written: everyone (a client that matches any host),
    root (client root acts as root here: no_root_squash, or squashed users mapped to uid or gid 0), async."""
    risks = set()
    if any(_client_or_none(c) and _client_or_none(c).everyone for c in export.clients):
        risks.add("everyone")
    if export.squash == "no_root_squash" or export.anonuid == 0 or export.anongid == 0:
        risks.add("root")
    if export.async_writes:
        risks.add("async")
    return risks


def _client_or_none(value: str) -> Client | None:
    try:
        return parse_client(value)
    except ValueError:
        return None


def check_nfs_export(export: NfsExportSpec) -> None:
    problems: dict[str, str] = {}
    check_path(export.path, problems)
    if not export.clients:
        problems["clients"] = "At least one client: a host, a network (10.0.0.0/24) or *"
    elif len(export.clients) > MAX_CLIENTS:
        problems["clients"] = f"At most {MAX_CLIENTS} clients per export: use networks or a @netgroup"
    else:
        bad = []
        for client in export.clients:
            try:
                parse_client(client)
            except ValueError as exc:
                bad.append(str(exc))
        if bad:
            problems["clients"] = "; ".join(bad[:3])
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
            # Exported only while the path is a mount point: a locked or unmounted dataset leaves an empty folder
            # on the parent filesystem, which must never be served (or written into) in its place.
            "mountpoint",
        ]
        if export.anonuid is not None:
            options.append(f"anonuid={export.anonuid}")
        if export.anongid is not None:
            options.append(f"anongid={export.anongid}")
        opts = ",".join(options)
        clients = [parse_client(client).text for client in export.clients]
        lines.append(f'"{export.path}" ' + " ".join(f"{client}({opts})" for client in clients))
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
    return replace_and_reload(t, NFS_EXPORTS, text, ["exportfs", "-ra"], timeout=60, stderr_fails=True)


def apply_nfs_conf(t: Transport, text: str) -> bool:
    return replace_and_reload(t, NFS_CONF, text, ["systemctl", "restart", "nfs-server"], timeout=120)


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


def parse_client_infos(grep_output: str) -> list[str]:
    """`grep -r -H '' --include=info /proc/fs/nfsd/clients` → one info text per client (lines are path:line)."""
    infos: dict[str, list[str]] = {}
    for line in grep_output.splitlines():
        path, _, text = line.partition(":")
        infos.setdefault(path, []).append(text)
    return ["\n".join(lines) for _, lines in sorted(infos.items())]


def clients(t: Transport) -> list[dict]:
    """NFSv4 clients (nfsd's per-client info files) and NFSv3 mounts (mountd's rmtab)."""
    v4 = t.run(["grep", "-r", "-H", "-s", "--include=info", "", "--", NFSD_CLIENTS], timeout=30, check=False)
    rmtab = t.run(["cat", "--", RMTAB], timeout=30, check=False).stdout
    return [*(parse_nfs_client_info(i) for i in parse_client_infos(v4.stdout)), *parse_rmtab(rmtab)]


def reexport(t: Transport) -> None:
    """Export again what the exports files list (a path offered only while mounted comes back once it is)."""
    t.run(["exportfs", "-ra"], timeout=60, mutating=True)


def parse_exportfs_s(text: str) -> list[tuple[str, str]]:
    """`exportfs -s` (what the kernel exports now): (path, client) for each line `path  client(options)`."""
    found = []
    for line in text.splitlines():
        match = re.match(r"^(/\S*)\s+(\S+?)\(", line)
        if match:
            found.append((match[1], match[2]))
    return found


def unexport(t: Transport, paths: list[str]) -> list[str]:
    """Stop exporting these paths (and the paths below them) now, client by client (exportfs -u), so their
    filesystems can unmount: nfsd holds an exported filesystem busy even after its NFSv4 clients unmounted. The
    exports file keeps them: the next exportfs -ra brings them back, and their mountpoint option keeps a path that
    is not mounted unserved. Returns client:path for each one stopped."""
    current = parse_exportfs_s(t.run(["exportfs", "-s"], timeout=30).stdout)
    stopped = []
    for path, client in current:
        if any(path == p or path.startswith(p.rstrip("/") + "/") for p in paths):
            t.run(["exportfs", "-u", f"{client}:{path}"], mutating=True, timeout=30)
            stopped.append(f"{client}:{path}")
    return stopped
