"""Prometheus exposition of what Tarn knows (the inventory in the database, no command per scrape): hosts, pools,
datasets and snapshots, links' counters, ARC, open alerts, benchmarks' last bandwidth, and from the sampler each
vdev's and dataset's I/O counters, nfsd operations, the last sample's throughput by SMB and NFS client and its cost. A collector builds the
families per scrape; prometheus_client writes the text format."""

from django.db.models import Count
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

from analytics import series
from analytics.choices import RAW
from analytics.models import Alert, Sample, SamplerState
from appliance.models import Host
from benchmarks.selectors import runs_last_succeeded
from hostlib.sampling import IoRow, NfsdRow, VdevRow
from pools.selectors import dataset_counts, device_errors_by_pool, pools_all, snapshot_counts
from tuning.selectors import arc_by_host, link_counters


class InventoryCollector:
    def collect(self):
        hosts = {h.pk: h.name for h in Host.objects.only("pk", "name")}
        up = GaugeMetricFamily("tarn_host_up", "1 if Tarn's last look at the host succeeded", labels=["host"])
        for host in Host.objects.only("name", "facts_error"):
            up.add_metric([host.name], 0 if host.facts_error else 1)
        yield up
        yield from _pools(hosts)
        yield from _counts(hosts)
        yield from _links(hosts)
        yield from _arc(hosts)
        yield from _sampled(hosts)
        alerts = GaugeMetricFamily("tarn_alerts_open", "Open alerts by level", labels=["level"])
        for row in Alert.objects.filter(cleared_at__isnull=True).values("level").annotate(n=Count("id")):
            alerts.add_metric([row["level"]], row["n"])
        yield alerts
        bench = GaugeMetricFamily(
            "tarn_benchmark_last_bandwidth_bytes",
            "Bytes/s of the last successful run",
            labels=["host", "profile", "target"],
        )
        for run in runs_last_succeeded():
            bench.add_metric([hosts.get(run.host_id, ""), run.profile, run.target], run.bandwidth)
        yield bench


def _pools(hosts):
    families = {
        "state": GaugeMetricFamily("tarn_pool_state", "1 for the pool's state", labels=["host", "pool", "state"]),
        "size": GaugeMetricFamily("tarn_pool_size_bytes", "Pool size", labels=["host", "pool"]),
        "allocated": GaugeMetricFamily("tarn_pool_allocated_bytes", "Pool allocated", labels=["host", "pool"]),
        "capacity": GaugeMetricFamily("tarn_pool_capacity_ratio", "Allocated share, 0-1", labels=["host", "pool"]),
        "errors": GaugeMetricFamily(
            "tarn_pool_device_errors", "Read, write and checksum errors of its devices", labels=["host", "pool"]
        ),
        "scrub": GaugeMetricFamily(
            "tarn_pool_last_scan_end_timestamp_seconds", "End of the last scrub or resilver", labels=["host", "pool"]
        ),
    }
    errors = device_errors_by_pool()
    for pool in pools_all():
        labels = [hosts.get(pool.host_id, ""), pool.name]
        families["state"].add_metric([*labels, pool.state], 1)
        families["size"].add_metric(labels, pool.size)
        families["allocated"].add_metric(labels, pool.allocated)
        families["capacity"].add_metric(labels, pool.capacity / 100)
        families["errors"].add_metric(labels, errors.get(pool.pk, 0))
        if pool.scan_end:
            families["scrub"].add_metric(labels, pool.scan_end.timestamp())
    yield from families.values()


def _counts(hosts):
    datasets = GaugeMetricFamily("tarn_datasets", "Datasets and volumes", labels=["host"])
    for host_id, n in dataset_counts().items():
        datasets.add_metric([hosts.get(host_id, "")], n)
    yield datasets
    snapshots = GaugeMetricFamily("tarn_snapshots", "Snapshots", labels=["host"])
    for host_id, n in snapshot_counts().items():
        snapshots.add_metric([hosts.get(host_id, "")], n)
    yield snapshots


def _links(hosts):
    families = {
        f"{d}_{n}": CounterMetricFamily(
            f"tarn_link_{'receive' if d == 'rx' else 'transmit'}_{n}",
            f"Link {n} {'received' if d == 'rx' else 'sent'}, as last read",
            labels=["host", "link"],
        )
        for d in ("rx", "tx")
        for n in ("bytes", "packets", "errors", "dropped")
    }
    for host_id, name, counters in link_counters():
        for key, family in families.items():
            if key in counters:
                family.add_metric([hosts.get(host_id, ""), name], counters[key])
    yield from families.values()


def _arc(hosts):
    size = GaugeMetricFamily("tarn_arc_size_bytes", "ARC size, as last read", labels=["host"])
    target = GaugeMetricFamily("tarn_arc_max_bytes", "ARC maximum", labels=["host"])
    hits = CounterMetricFamily("tarn_arc_hits", "ARC hits", labels=["host"])
    misses = CounterMetricFamily("tarn_arc_misses", "ARC misses", labels=["host"])
    for host_id, arc in arc_by_host().items():
        name = hosts.get(host_id, "")
        for family, key in ((size, "size"), (target, "c_max"), (hits, "hits"), (misses, "misses")):
            if key in arc:
                family.add_metric([name], arc[key])
    yield from (size, target, hits, misses)


def _sampled(hosts):
    """The sampler's last counters (cumulative: Prometheus takes the rates) and its last throughput by client."""
    io = {
        f"{kind}_{n}": CounterMetricFamily(
            f"tarn_{kind}_{n}",
            f"{kind.capitalize()} {n.replace('_', ' ')} since import or mount",
            labels=["host", "pool", kind] if kind == "vdev" else ["host", kind],
        )
        for kind in ("vdev", "dataset")
        for n in ("read_ops", "write_ops", "read_bytes", "write_bytes")
    }
    nfsd = CounterMetricFamily("tarn_nfsd_operations", "NFS server operations (v3 and v4)", labels=["host"])
    cost = GaugeMetricFamily("tarn_sample_cpu_seconds", "CPU the last sample cost on the host", labels=["host"])
    for state in SamplerState.objects.exclude(counters={}).only("host_id", "counters"):
        host, c = hosts.get(state.host_id, ""), state.counters
        for pool, vdevs in c.get("vdevs", {}).items():
            for vdev, row in vdevs.items():
                for n, value in VdevRow(*row)._asdict().items():
                    if f"vdev_{n}" in io:
                        io[f"vdev_{n}"].add_metric([host, pool, vdev], value)
        for dataset, row in c.get("datasets", {}).items():
            for n, value in IoRow(*row)._asdict().items():
                io[f"dataset_{n}"].add_metric([host, dataset], value)
        nfsd.add_metric([host], NfsdRow(*c.get("nfsd", [0, 0, 0])).operations)
        cost.add_metric([host], c.get("cost_cpu_ms", 0) / 1000)
    yield from (*io.values(), nfsd, cost)
    clients = GaugeMetricFamily(
        "tarn_client_bytes_per_second",
        "Throughput by SMB and NFS client in the last sample",
        labels=["host", "protocol", "client", "direction"],
    )
    for host_id in hosts:
        latest = Sample.objects.filter(host_id=host_id, step=RAW).order_by("-at").values_list("values", flat=True)[:1]
        for name, value in series.unpack(latest[0] if latest else {}).items():
            group, subject, metric = series.split(name)
            if group in ("smb_client", "nfs_client"):
                clients.add_metric([hosts[host_id], group[:3], subject, metric.removesuffix("_bps")], value)
    yield clients
