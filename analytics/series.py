"""Pure arithmetic on samples: the rates between two of the sampler's documents (counters are cumulative), and the
averages that make rollups. A series is a flat key 'group|subject|metric' (subject empty for host-wide figures),
stored packed as group → subject → metric; per-subject figures that are zero are left out, so an idle dataset or a
client that left costs nothing."""

from collections import defaultdict

from hostlib.sampling import ConnRow, CpuRow, IoRow, LinkRow, NfsdRow, VdevRow

SEP = "|"
# A counter that went backwards (a link recreated, a pool re-imported, a connection reused) gives no rate.
NOT_SAMPLED = None


def key(group: str, subject: str, metric: str) -> str:
    return f"{group}{SEP}{subject}{SEP}{metric}"


def split(series: str) -> tuple[str, str, str]:
    group, subject, metric = series.split(SEP, 2)
    return group, subject, metric


def pack(values: dict[str, float]) -> dict[str, dict[str, dict[str, float]]]:
    """Flat series as stored: group → subject → metric → value (a third smaller than flat keys, and what the
    charts read)."""
    nested: dict = {}
    for name, value in values.items():
        group, subject, metric = split(name)
        nested.setdefault(group, {}).setdefault(subject, {})[metric] = value
    return nested


def unpack(nested: dict) -> dict[str, float]:
    return {
        key(g, s, m): v for g, subjects in nested.items() for s, metrics in subjects.items() for m, v in metrics.items()
    }


def _per_second(now, before, seconds):
    delta = now - before
    return delta / seconds if delta >= 0 else NOT_SAMPLED


def _put(values, group, subject, metric, value, *, keep_zero=False):
    if value is NOT_SAMPLED or (not value and not keep_zero):
        return
    values[key(group, subject, metric)] = round(value, 2) if abs(value) < 1000 else round(value)


def _counters(values, group, subject, now, before, names, seconds, *, keep_zero=False):
    for name, a, b in zip(names, now, before, strict=False):
        _put(values, group, subject, name, _per_second(a, b, seconds), keep_zero=keep_zero)


IO = ("r_ops", "w_ops", "r_bps", "w_bps")


def _io(row: VdevRow | IoRow) -> tuple[int, int, int, int]:
    return row.read_ops, row.write_ops, row.read_bytes, row.write_bytes


def _vdevs(sample: dict) -> dict[str, dict[str, VdevRow]]:
    return {
        pool: {name: VdevRow(*row) for name, row in members.items()}
        for pool, members in sample.get("vdevs", {}).items()
    }


def _pool_totals(vdevs: dict[str, dict[str, VdevRow]]) -> dict[str, list[int]]:
    """pool → [read ops, write ops, read bytes, write bytes]: the sum of its top-level vdevs (parent is the pool),
    without cache and spare devices (as zpool iostat's pool row)."""
    totals = {}
    for pool, members in vdevs.items():
        rows = [_io(v) for v in members.values() if v.parent == pool and v.vdev_class not in ("cache", "spare")]
        totals[pool] = [sum(col) for col in zip(*rows, strict=True)] if rows else [0, 0, 0, 0]
    return totals


def _connections(sample: dict) -> dict[tuple, ConnRow]:
    return {(row.protocol, row.client, row.port): row for row in (ConnRow(*c) for c in sample.get("conns", []))}


def rates(before: dict, now: dict) -> dict[str, float]:
    """Every figure per second between two samples of one host (or {} when they are too far apart to compare)."""
    seconds = now["t"] - before["t"]
    if seconds <= 0:
        return {}
    values: dict[str, float] = {}
    _cpu_rates(values, before, now)
    _arc_rates(values, before, now)
    _pool_rates(values, before, now, seconds)
    for dataset, row in now.get("datasets", {}).items():
        if old := before.get("datasets", {}).get(dataset):
            _counters(values, "dataset", dataset, _io(IoRow(*row)), _io(IoRow(*old)), IO, seconds)
    for link, row in now.get("links", {}).items():
        if old := before.get("links", {}).get(link):
            new, old = LinkRow(*row), LinkRow(*old)
            _counters(
                values,
                "link",
                link,
                (new.rx_bytes, new.tx_bytes),
                (old.rx_bytes, old.tx_bytes),
                ("rx_bps", "tx_bps"),
                seconds,
            )
            _put(
                values, "link", link, "errors", _per_second(new.errors + new.dropped, old.errors + old.dropped, seconds)
            )
    nfsd, nfsd0 = NfsdRow(*now.get("nfsd", [0, 0, 0])), NfsdRow(*before.get("nfsd", [0, 0, 0]))
    _put(values, "nfs", "", "ops", _per_second(nfsd.operations, nfsd0.operations, seconds), keep_zero=True)
    _client_rates(values, before, now, seconds)
    return values


def _cpu_rates(values: dict, before: dict, now: dict) -> None:
    cpu, cpu0 = CpuRow(*now["cpu"]), CpuRow(*before["cpu"])
    if cpu.total - cpu0.total > 0:
        _put(values, "cpu", "", "busy_pct", 100 * (cpu.busy - cpu0.busy) / (cpu.total - cpu0.total), keep_zero=True)
    _put(values, "sampler", "", "cpu_ms", now.get("cost_cpu_ms", 0), keep_zero=True)
    _put(values, "sampler", "", "wall_ms", now.get("round_trip_ms", now.get("cost_wall_ms", 0)), keep_zero=True)


def _arc_rates(values: dict, before: dict, now: dict) -> None:
    arc, arc0 = now["arc"], before["arc"]
    _put(values, "arc", "", "size", arc["size"], keep_zero=True)
    _put(values, "arc", "", "c_max", arc["c_max"], keep_zero=True)
    for prefix, name in (("", "hit_pct"), ("l2_", "l2_hit_pct")):
        hits, misses = arc[f"{prefix}hits"] - arc0[f"{prefix}hits"], arc[f"{prefix}misses"] - arc0[f"{prefix}misses"]
        if hits >= 0 and misses >= 0 and hits + misses:
            _put(values, "arc", "", name, 100 * hits / (hits + misses), keep_zero=True)


def _pool_rates(values: dict, before: dict, now: dict, seconds: float) -> None:
    vdevs, vdevs0 = _vdevs(now), _vdevs(before)
    pools, pools0 = _pool_totals(vdevs), _pool_totals(vdevs0)
    for pool, counters in pools.items():
        if pool not in pools0:
            continue
        _counters(values, "pool", pool, counters, pools0[pool], IO, seconds, keep_zero=True)
        # zpool iostat -l reports average waits since import: wait × ops is the total wait, so the difference
        # of totals over the difference of ops is this interval's average.
        waits, waits0 = now.get("waits", {}).get(pool), before.get("waits", {}).get(pool)
        if waits and waits0:
            for i, name in enumerate(("r_ms", "w_ms")):
                ops = counters[i] - pools0[pool][i]
                if ops > 0:
                    spent = waits[i] * counters[i] - waits0[i] * pools0[pool][i]
                    _put(values, "pool", pool, name, max(spent / ops, 0) / 1e6, keep_zero=True)
        for vdev, row in vdevs[pool].items():
            if old := vdevs0.get(pool, {}).get(vdev):
                _counters(values, "vdev", f"{pool}/{vdev}", _io(row), _io(old), IO, seconds)


def _client_rates(values: dict, before: dict, now: dict, seconds: float) -> None:
    """By client: the bytes each SMB or NFS connection moved. The NAS sends what clients read and receives what
    they write. A connection new since the last sample counts from zero (it began within the interval)."""
    totals = defaultdict(float)
    smb = now.get("smb", {})
    v4 = set(now.get("nfs4", []))
    exports = now.get("nfs_exports", {})
    old_conns = _connections(before)
    for ident, row in _connections(now).items():
        old = old_conns.get(ident)
        read = _per_second(row.sent, old.sent if old else 0, seconds)
        write = _per_second(row.received, old.received if old else 0, seconds)
        if read is NOT_SAMPLED or write is NOT_SAMPLED:
            continue
        subjects = [(f"{row.protocol}_client", row.client)]
        if row.protocol == "smb":
            session = smb.get(f"{row.client} {row.port}", {})
            subjects += [("smb_share", share) for share in session.get("shares", [])]
            subjects += [("smb_user", session["user"])] if session.get("user") else []
        else:
            subjects += [("nfs_version", "4" if row.client in v4 else "3")]
            subjects += [("nfs_export", path) for path in exports.get(row.client, [])]
        for group, subject in [(row.protocol, "")] + subjects:
            totals[(group, subject, "read_bps")] += read
            totals[(group, subject, "write_bps")] += write
    for protocol in ("smb", "nfs"):
        for metric in ("read_bps", "write_bps"):
            totals.setdefault((protocol, "", metric), 0.0)
    for (group, subject, metric), value in totals.items():
        _put(values, group, subject, metric, value, keep_zero=not subject)


GAUGES = ("_pct", "_ms", "size", "c_max")  # levels, not amounts: a row without them had none to report


def average(rows: list[dict[str, float]]) -> dict[str, float]:
    """The mean of each series over rows: a rate missing from a row was zero there; a gauge (a ratio, a latency, a
    size) missing from a row had nothing to report and is averaged over the rows that have it."""
    if not rows:
        return {}
    sums, counts = defaultdict(float), defaultdict(int)
    for row in rows:
        for name, value in row.items():
            sums[name] += value
            counts[name] += 1
    means = {}
    for name, total in sums.items():
        mean = total / (counts[name] if name.endswith(GAUGES) else len(rows))
        means[name] = round(mean, 2) if abs(mean) < 1000 else round(mean)
    return means
