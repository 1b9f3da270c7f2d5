"""iperf3 between two hosts: a one-shot server on one (a transient unit, so it never outlives its test), the client
on the other; the client's JSON is what is kept (iperf3 -J).

Neither end runs as root. The server runs as a dynamic user in systemd's sandbox and listens on the one data address
it is measured on (not every address of the NAS). The client's machine may be Tarn's own, where every NAS's SSH key
lives: there it runs as nobody, with no capability and no way to gain one (setpriv)."""

import json
import time
from dataclasses import asdict, dataclass

from hostlib import systemd
from hostlib.errors import CommandFailed, HostError
from hostlib.net import check_address
from hostlib.runner import Transport

PORT = 5301  # Tarn's own checks (tuning's measured effect)
BENCH_PORT = 5201  # benchmark runs: iperf3's default
MAX_STREAMS = 16

# The server's unit: a user made for the unit and gone with it, on top of the sandbox fio runs in (no devices, the
# file system read-only, no privilege to gain). iperf3's scratch file goes to the unit's private /tmp.
SERVER_SANDBOX = ("DynamicUser=yes", *systemd.SANDBOX, "CapabilityBoundingSet=", "PrivateUsers=yes")
# The client, where the transport is root: nobody (65534 on Debian and its kin), no groups, no capabilities.
NOBODY = (
    "setpriv",
    "--reuid=65534",
    "--regid=65534",
    "--clear-groups",
    "--no-new-privs",
    "--inh-caps=-all",
    "--bounding-set=-all",
    "--",
)


@dataclass(frozen=True)
class Throughput:
    bps: float  # bits per second the receiver got
    retransmits: int
    seconds: float
    reverse: bool  # True: the server (the NAS) sent
    mss: int | None = None
    argv: tuple[str, ...] = ()
    streams: int = 1
    intervals: tuple[float, ...] = ()  # bits per second, each interval (a second) of the run

    def as_dict(self) -> dict:
        data = asdict(self)
        data["argv"], data["intervals"] = list(self.argv), list(self.intervals)
        return data


def parse_client(text: str, *, reverse: bool, argv=()) -> Throughput:
    """iperf3 -J client output (the received sum is what crossed the path)."""
    data = json.loads(text)
    if data.get("error"):
        raise HostError(f"iperf3: {data['error']}")
    end = data["end"]
    return Throughput(
        bps=float(end["sum_received"]["bits_per_second"]),
        retransmits=int(end.get("sum_sent", {}).get("retransmits", 0) or 0),
        seconds=float(end["sum_received"].get("seconds", 0)),
        reverse=reverse,
        mss=(data.get("start", {}).get("tcp_mss_default") or None),
        argv=tuple(argv),
        streams=int(data.get("start", {}).get("test_start", {}).get("num_streams", 1)),
        intervals=tuple(float(i["sum"]["bits_per_second"]) for i in data.get("intervals", []) if "sum" in i),
    )


def client_argv(address: str, *, seconds: int, reverse: bool, port: int = PORT, streams: int = 1) -> list[str]:
    ip = check_address(address)  # no IPv6 zone: it names a link of the client's machine
    if not 1 <= int(streams) <= MAX_STREAMS:
        raise ValueError(f"streams: 1 to {MAX_STREAMS}")
    argv = ["iperf3", "-c", ip, "-p", str(int(port)), "-t", str(int(seconds)), "-J", "--connect-timeout", "5000"]
    return argv + (["-P", str(int(streams))] if streams > 1 else []) + (["-R"] if reverse else [])


def server_unit(tag: str) -> str:
    return f"tarn-iperf-{tag}"


def server_argv(tag: str, address: str, *, port: int = PORT) -> list[str]:
    """The one-off server, bound to the address the client is sent to."""
    ip = check_address(address)
    sandbox = [f"--property={p}" for p in SERVER_SANDBOX]
    iperf = ["iperf3", "-s", "-1", "-p", str(int(port)), "-B", ip]
    return ["systemd-run", f"--unit={server_unit(tag)}", "--collect", *sandbox, "--", *iperf]


def unprivileged(t: Transport, argv: list[str]) -> list[str]:
    """argv run as nobody where the transport is root (as it is on a NAS); as is where it is not root already."""
    return [*NOBODY, *argv] if t.privileged else list(argv)


def measure(
    server: Transport,
    client: Transport,
    address: str,
    *,
    seconds: int,
    reverse: bool,
    tag: str,
    port: int = PORT,
    streams: int = 1,
) -> Throughput:
    """One run: a one-off server on `server` (unit tarn-iperf-<tag>: it never outlives one test), the client on
    `client` to address. Stopping that unit (a cancel) ends the client's test early with an error."""
    unit = server_unit(tag)
    server.run(server_argv(tag, address, port=port), mutating=True, timeout=30)
    argv = client_argv(address, seconds=seconds, reverse=reverse, port=port, streams=streams)
    try:
        for _ in range(10):  # the server needs a moment to listen
            result = client.run(unprivileged(client, argv), check=False, timeout=seconds + 30)
            if "Connection refused" not in result.stdout + result.stderr:
                break
            time.sleep(0.5)
        if result.returncode != 0:
            raise CommandFailed(argv, result.returncode, _error(result.stdout) or result.stderr)
        return parse_client(result.stdout, reverse=reverse, argv=argv)
    finally:
        systemd.stop(server, unit)


def _error(stdout: str) -> str:
    try:
        return json.loads(stdout).get("error", "")
    except ValueError:
        return ""
