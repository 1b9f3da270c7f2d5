"""The host's sampler: one run prints every counter analytics needs as one JSON document, so a sample costs one
command (one SSH round trip) however many pools, links and clients the NAS has.

It reads the kernel's cumulative counters (ARC, per-dataset objsets, links, nfsd, CPU) from /proc, asks OpenZFS
for each pool's per-vdev counters (`zpool get … all-vdevs`, exact since import) and average waits (`zpool iostat
-l`), `ss` for the bytes of every SMB and NFS connection (throughput by client, the same way for both protocols),
and `smbstatus -j` — only while someone is connected over SMB — for the user and share behind each connection;
mountd's rmtab (NFSv3) and nfsd's per-client open files (NFSv4) for the exports behind each NFS client.
Rates are differences between two samples; nothing here blocks for an interval.

This module must stay self-contained (standard library only, no other imports from Tarn): every transport runs
its source with `python3 -I -S -c`, the same on this machine and on a NAS reached over SSH. The parse functions are
pure and tested against output captured from the lab.
"""

import os
import resource
import subprocess
import sys
import time

from hostlib.wire import dumps, loads

KSTAT = "/proc/spl/kstat/zfs"
SMB_PORT, NFS_PORT = 445, 2049
VDEV_PROPS = "parent,read_ops,write_ops,read_bytes,write_bytes"
ARC_FIELDS = {
    "size": "size",
    "c_max": "c_max",
    "hits": "hits",
    "misses": "misses",
    "l2_hits": "l2_hits",
    "l2_misses": "l2_misses",
    "l2_size": "l2_size",
}
ENV = {"LC_ALL": "C", "LANG": "C", "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}


def parse_kstat(text):
    """name → value (int where the type is numeric) from a kstat file ('name type data' after two header lines)."""
    values = {}
    for line in text.splitlines()[2:]:
        parts = line.split(None, 2)
        if len(parts) == 3:
            values[parts[0]] = parts[2] if parts[1] == "7" else int(parts[2])
    return values


def parse_arcstats(text):
    stats = parse_kstat(text)
    return {key: int(stats.get(field, 0)) for key, field in ARC_FIELDS.items()}


def parse_objset(text):
    """(dataset, [reads, writes, nread, nwritten]) from one objset-0x… kstat."""
    stats = parse_kstat(text)
    return stats.get("dataset_name", ""), [int(stats.get(k, 0)) for k in ("reads", "writes", "nread", "nwritten")]


def parse_net_dev(text):
    """interface → [rx_bytes, tx_bytes, rx_packets, tx_packets, rx_errors + tx_errors, rx_drop + tx_drop]."""
    links = {}
    for line in text.splitlines()[2:]:
        name, _, rest = line.partition(":")
        name, f = name.strip(), rest.split()
        if name and name != "lo" and len(f) >= 12:
            links[name] = [int(f[0]), int(f[8]), int(f[1]), int(f[9]), int(f[2]) + int(f[10]), int(f[3]) + int(f[11])]
    return links


def parse_nfsd(text):
    """NFS server totals: [ops (v3 + v4 operations), bytes read, bytes written] from /proc/net/rpc/nfsd."""
    ops = read = written = 0
    for line in text.splitlines():
        f = line.split()
        if not f:
            continue
        if f[0] in ("proc3", "proc4ops"):  # the first number is how many counters follow
            ops += sum(int(x) for x in f[2:])
        elif f[0] == "io" and len(f) >= 3:
            read, written = int(f[1]), int(f[2])
    return [ops, read, written]


def parse_cpu(text):
    """[busy, total] jiffies from /proc/stat's first line (busy = all but idle and iowait)."""
    f = [int(x) for x in text.splitlines()[0].split()[1:9]]
    total = sum(f)
    return [total - f[3] - f[4], total]


def _address(endpoint):
    """(address, port) from ss's '10.0.2.2:5678', '[::ffff:10.0.2.2]:5678' or '[fe80::1%eth0]:5678'."""
    address, _, port = endpoint.rpartition(":")
    address = address.strip("[]").split("%")[0]
    if address.startswith("::ffff:") and "." in address:
        address = address[len("::ffff:") :]
    return address, int(port)


def parse_ss(text):
    """One row per established connection on the SMB or NFS port: [protocol, client, client port, bytes the NAS
    sent (acked), bytes it received]. `ss -t -i -n -H` prints each connection's line, then its info indented."""
    rows, current = [], None
    for line in text.splitlines():
        if not line.strip():
            continue
        if not line[0].isspace():
            f = line.split()
            if len(f) < 4:
                current = None
                continue
            _, local_port = _address(f[2])
            client, client_port = _address(f[3])
            protocol = {SMB_PORT: "smb", NFS_PORT: "nfs"}.get(local_port)
            current = [protocol, client, client_port, 0, 0] if protocol else None
            if current:
                rows.append(current)
        elif current:
            for item in line.split():
                key, _, value = item.partition(":")
                if key == "bytes_acked":
                    current[3] = int(value)
                elif key == "bytes_received":
                    current[4] = int(value)
    return rows


def parse_smbstatus(text):
    """'address port' → {user, shares, dialect} from `smbstatus -j`: each session (its 'hostname' is the client's
    endpoint, e.g. ipv4:10.0.2.2:41202) with the shares its tree connects name."""
    data = loads(text or "{}")
    sessions, by_id = {}, {}
    for session in (data.get("sessions") or {}).values():
        kind, _, endpoint = (session.get("hostname") or "").partition(":")
        address, _, port = endpoint.rpartition(":")
        if kind not in ("ipv4", "ipv6") or not port.isdigit():
            continue
        entry = {
            "user": session.get("username", ""),
            "shares": [],
            "dialect": (session.get("session_dialect") or "").replace("SMB", "").strip("_ "),
        }
        sessions[f"{address.strip('[]')} {port}"] = by_id[str(session.get("session_id"))] = entry
    for tcon in (data.get("tcons") or {}).values():
        entry = by_id.get(str(tcon.get("session_id")))
        if entry is not None and tcon.get("service") and tcon["service"] not in entry["shares"]:
            entry["shares"].append(tcon["service"])
    return sessions


def parse_vdev_props(text):
    """vdev → [parent, class, read_ops, write_ops, read_bytes, write_bytes] from `zpool get -j --json-int`."""
    data = loads(text)
    vdevs = {}
    for name, vdev in (data.get("vdevs") or {}).items():
        if vdev.get("vdev_type") == "root":
            continue
        props = vdev.get("properties") or {}

        def value(key, props=props):
            return (props.get(key) or {}).get("value", 0)

        vdevs[name] = [
            value("parent") or "",
            vdev.get("class", "normal"),
            int(value("read_ops")),
            int(value("write_ops")),
            int(value("read_bytes")),
            int(value("write_bytes")),
        ]
    return vdevs


def parse_health(text):
    """(pool state, {vdev: state} of the vdevs not ONLINE) from the same `zpool get -j` document."""
    data = loads(text)
    vdevs = {
        name: v.get("state", "")
        for name, v in (data.get("vdevs") or {}).items()
        if v.get("vdev_type") != "root" and v.get("state") != "ONLINE"
    }
    return (data.get("pool") or {}).get("state", ""), vdevs


def parse_iostat_waits(text):
    """pool → [average read wait, average write wait] in ns since import, from `zpool iostat -H -p -l` (pool rows:
    name, alloc, free, read ops, write ops, read bw, write bw, total_wait read, total_wait write, …)."""
    waits = {}
    for line in text.splitlines():
        f = line.split("\t")
        if len(f) >= 9:
            waits[f[0]] = [int(x) if x.isdigit() else 0 for x in f[7:9]]
    return waits


def parse_nfs4_clients(text):
    """The addresses of NFSv4 clients from /proc/fs/nfsd/clients/*/info (v3 is stateless: not listed)."""
    return sorted(
        {
            _address(line.split('"')[1])[0]
            for line in text.splitlines()
            if line.startswith("address:") and line.count('"') == 2
        }
    )


def parse_rmtab(text):
    """client → exports it has mounted over NFSv3, from mountd's /var/lib/nfs/rmtab ('client:/path:0xcount')."""
    mounts = {}
    for line in text.splitlines():
        client, sep, rest = line.partition(":/")
        path, _, count = rest.rpartition(":")
        if sep and path and int(count or "0", 16) > 0:
            mounts.setdefault(client, []).append("/" + path)
    return mounts


def parse_mountinfo(text):
    """(major, minor) → mount point, from /proc/self/mountinfo ('id parent major:minor root mountpoint …')."""
    mounts = {}
    for line in text.splitlines():
        f = line.split()
        if len(f) > 4 and ":" in f[2]:
            major, minor = f[2].split(":")
            mounts.setdefault((int(major), int(minor)), f[4].replace("\\040", " "))
    return mounts


def parse_nfs4_states(text, mounts):
    """The mount points of the files an NFSv4 client has open, from /proc/fs/nfsd/clients/<id>/states (each open's
    superblock: "<major hex>:<minor hex>:<inode>")."""
    found = set()
    for line in text.splitlines():
        _, sep, rest = line.partition('superblock: "')
        if sep:
            major, minor, _ = rest.split('"')[0].split(":")
            if (int(major, 16), int(minor, 16)) in mounts:
                found.add(mounts[(int(major, 16), int(minor, 16))])
    return sorted(found)


def _read(path):
    try:
        with open(path) as fh:
            return fh.read()
    except OSError:
        return ""


def _run(argv, timeout=10):
    try:
        result = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=ENV, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return "", str(exc)
    return (result.stdout, "") if result.returncode == 0 else ("", result.stderr.strip()[-300:])


def collect():
    """Every counter, now, as one dict; a source that fails is named in 'errors' and the rest still comes."""
    started = time.monotonic()
    sample = {"t": time.time(), "errors": {}}
    sample["cpu"] = parse_cpu(_read("/proc/stat") or "cpu 0 0 0 0 0 0 0 0")
    sample["cpus"] = os.cpu_count() or 1
    sample["arc"] = parse_arcstats(_read(f"{KSTAT}/arcstats"))
    sample["links"] = parse_net_dev(_read("/proc/net/dev"))
    sample["nfsd"] = parse_nfsd(_read("/proc/net/rpc/nfsd"))
    pools = sorted(p for p in os.listdir(KSTAT) if os.path.isfile(f"{KSTAT}/{p}/state")) if os.path.isdir(KSTAT) else []
    sample["datasets"], sample["vdevs"], sample["health"] = {}, {}, {}
    for pool in pools:
        for name in os.listdir(f"{KSTAT}/{pool}"):
            if name.startswith("objset-"):
                dataset, counters = parse_objset(_read(f"{KSTAT}/{pool}/{name}"))
                if dataset:
                    sample["datasets"][dataset] = counters
        out, err = _run(["zpool", "get", "-j", "--json-int", VDEV_PROPS, "--", pool, "all-vdevs"])
        if err:
            sample["errors"][f"zpool get {pool}"] = err
        sample["vdevs"][pool] = parse_vdev_props(out) if out else {}
        if out:
            sample["health"][pool] = parse_health(out)
    out, err = _run(["zpool", "iostat", "-H", "-p", "-l"]) if pools else ("", "")
    sample["waits"] = parse_iostat_waits(out)
    if err:
        sample["errors"]["zpool iostat"] = err
    out, err = _run(
        [
            "ss",
            "-t",
            "-i",
            "-n",
            "-H",
            "state",
            "established",
            "(",
            "sport",
            "=",
            f":{SMB_PORT}",
            "or",
            "sport",
            "=",
            f":{NFS_PORT}",
            ")",
        ]
    )
    sample["conns"] = parse_ss(out)
    if err:
        sample["errors"]["ss"] = err
    sample["smb"] = {}
    if any(row[0] == "smb" for row in sample["conns"]):  # smbstatus costs more than the rest: only when needed
        out, err = _run(["smbstatus", "-j"])
        sample["smb"] = parse_smbstatus(out) if out else {}
        if err:
            sample["errors"]["smbstatus"] = err
    # NFS clients and what they mounted: v3 from mountd's rmtab; v4 from each client's address and the mount
    # points of the files it has open (a v4 mount is not listed by export)
    folder = "/proc/fs/nfsd/clients"
    clients = [f"{folder}/{c}" for c in (os.listdir(folder) if os.path.isdir(folder) else [])]
    sample["nfs4"] = parse_nfs4_clients("".join(_read(f"{c}/info") for c in clients))
    exports = parse_rmtab(_read("/var/lib/nfs/rmtab"))
    mounts = parse_mountinfo(_read("/proc/self/mountinfo")) if clients else {}
    for c in clients:
        address = parse_nfs4_clients(_read(f"{c}/info"))
        for path in parse_nfs4_states(_read(f"{c}/states"), mounts) if address else ():
            exports.setdefault(address[0], []).append(path)
    sample["nfs_exports"] = {client: sorted(set(paths)) for client, paths in exports.items()}
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    sample["cost_cpu_ms"] = round(1000 * (own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime), 1)
    sample["cost_wall_ms"] = round(1000 * (time.monotonic() - started), 1)
    return sample


if __name__ == "__main__":
    sys.stdout.write(dumps(collect()))
