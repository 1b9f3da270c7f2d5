"""Network runs: iperf3 between a peer (another host Tarn manages, or this machine) and one of the NAS's
addresses, both directions. The server is a one-off transient unit on the NAS (it never outlives one test); the
client runs on the peer, each direction in turn, and each direction's result and per-second intervals are kept."""

from django.core.exceptions import ValidationError
from django.db import transaction

from appliance.choices import RunStatus
from appliance.models import Host
from appliance.operations import Tracker, operation_runner
from benchmarks.choices import RunKind
from benchmarks.models import Run
from benchmarks.selectors import profile_get
from benchmarks.services.common import BENCHMARK, begin, bench_operation, cancelled, finish, manifest_common
from hostlib import facts, iperf, systemd
from hostlib.errors import HostError
from tuning.selectors import host_addresses

MAX_SECONDS = 300


def benchmark_network_start(
    *, host: Host, user, profile: str, peer: Host | None, address: str, runtime: int = 0
) -> Run:
    """runtime: each direction's seconds (empty: the profile's)."""
    chosen = profile_get(profile)
    if chosen is None or not chosen.network:
        raise ValidationError({"profile": "Choose one of the network profiles."})
    seconds = runtime or chosen.seconds
    if not 1 <= seconds <= MAX_SECONDS:
        raise ValidationError({"runtime": f"1 to {MAX_SECONDS} seconds per direction."})
    jobs = [
        {"name": f"to-{host.name}"[:40], "streams": chosen.iperf_streams, "seconds": seconds, "reverse": False},
        {"name": f"from-{host.name}"[:40], "streams": chosen.iperf_streams, "seconds": seconds, "reverse": True},
    ]
    run = Run(
        host=host,
        kind=RunKind.NETWORK,
        profile=profile,
        title=chosen.title,
        target=address,
        peer=peer,
        jobs=jobs,
        created_by=user,
    )
    return queue_network(run)


def queue_network(run: Run) -> Run:
    """Checks against the hosts as last read (the peer is another host, the address one of the NAS's)."""
    if run.peer is None or run.peer.pk == run.host_id:
        raise ValidationError({"peer": "Choose another host to run the client on (the far end of the link)."})
    if run.target not in host_addresses(run.host):
        raise ValidationError({"address": f"Choose one of {run.host.name}'s addresses."})
    with transaction.atomic():
        run.save()
        run.operation = bench_operation("benchmarks.network", run.host, run.created_by, {"run": run.pk})
        run.save(update_fields=["operation"])
    return run


def _side(t: iperf.Throughput) -> dict:
    """The shape of a fio direction (so results compare and chart alike), plus iperf3's own figures."""
    return {
        "bw_bytes": int(t.bps / 8),
        "iops": None,
        "lat_mean_ns": None,
        "p50_ns": None,
        "p95_ns": None,
        "p99_ns": None,
        "p999_ns": None,
        "retransmits": t.retransmits,
        "seconds": t.seconds,
        "streams": t.streams,
        "mss": t.mss,
    }


@operation_runner("benchmarks.network", lock=BENCHMARK, queue="bench")
def benchmark_network_run(tracker: Tracker) -> None:
    """Direction 'to' the NAS is a write for it (the peer sends), 'from' a read (the NAS sends, iperf3 -R)."""
    run = Run.objects.select_related("host", "peer").get(pk=tracker.op.params["run"])
    server = tracker.transport()
    client = tracker.transport(run.peer)
    begin(run)
    tag = str(tracker.op.pk)
    try:
        run.manifest = {
            **manifest_common(server, run),
            "peer": run.peer.name,
            "address": run.target,
            "iperf3": facts.tool_version(server, "iperf3"),
            "iperf3_peer": facts.tool_version(client, "iperf3"),
        }
        Run.objects.filter(pk=run.pk).update(manifest=run.manifest)
        for n, job in enumerate(run.jobs):
            if Run.objects.filter(pk=run.pk, cancel_requested=True).exists():
                return cancelled(run, tracker)
            way = f"{run.peer.name} {'←' if job['reverse'] else '→'} {run.host.name}"
            percent = int(100 * n / len(run.jobs))
            Run.objects.filter(pk=run.pk).update(progress=percent, current={"job": job["name"], "bytes_s": 0})
            tracker.progress(percent, f"iperf3 {way}, {job['streams']} stream(s), {job['seconds']} s")
            result = iperf.measure(
                server,
                client,
                run.target,
                seconds=job["seconds"],
                reverse=job["reverse"],
                tag=tag,
                port=iperf.BENCH_PORT,
                streams=job["streams"],
            )
            run.manifest["argv"].append(list(result.argv))
            side = "read" if job["reverse"] else "write"
            run.results.append(
                {
                    "job": job["name"],
                    "version": run.manifest["iperf3"],
                    "read": None,
                    "write": None,
                    side: _side(result),
                    "network": result.as_dict(),
                }
            )
            direction = 0 if job["reverse"] else 1
            run.series.append(
                [[1000 * (i + 1), int(bps / 8 / 1024), direction] for i, bps in enumerate(result.intervals)]
            )
            Run.objects.filter(pk=run.pk).update(manifest=run.manifest, results=run.results, series=run.series)
        finish(run, RunStatus.SUCCEEDED, "Both directions measured.")
        tracker.progress(100, run.message)
    except (HostError, ValueError) as exc:
        finish(run, RunStatus.FAILED, str(exc))
        raise HostError(str(exc)) from None
    finally:
        systemd.stop(server, iperf.server_unit(tag))
