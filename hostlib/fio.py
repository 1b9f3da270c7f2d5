"""fio: a job built from validated fields (nobody types a job file: no newlines, `[`, `=`, `$`, `:` lists or exec
options can reach fio), its JSON result (bandwidth, IOPS, completion-latency percentiles per direction) and the
per-second bandwidth log it writes for the time-series graph."""

import json
import re
from dataclasses import dataclass, fields

RW = ("read", "write", "randread", "randwrite", "randrw", "rw")
ENGINES = ("psync", "sync", "libaio", "io_uring")
NAME = re.compile(r"^[a-z0-9][a-z0-9-]{0,39}$")
BLOCK = re.compile(r"^[1-9][0-9]{0,7}[km]?$")  # 4k, 128k, 1m, 512 (ASCII digits: \d takes any script's)
SIZE = re.compile(r"^[1-9][0-9]{0,6}[kmg]$")  # 64m, 2g
UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
SECTOR, MAX_BLOCK = 512, 16 << 20  # a block is whole sectors (O_DIRECT needs it), at most a 16 MiB record
DIRECTORY = re.compile(r"^/[A-Za-z0-9_.+/-]*$")  # no ':' (fio reads it as a list), no spaces
PERCENTILES = ("50.000000", "95.000000", "99.000000", "99.900000")
LIMITS = {"runtime": (1, 86400), "ramp": (0, 3600), "numjobs": (1, 64), "iodepth": (1, 256), "nrfiles": (1, 10000)}


@dataclass(frozen=True)
class FioJob:
    name: str
    rw: str
    bs: str
    size: str  # per job
    runtime: int = 60  # seconds, time-based
    ramp: int = 0
    numjobs: int = 1
    iodepth: int = 1
    ioengine: str = "psync"
    rwmixread: int | None = None  # randrw/rw: the read share in percent
    sync: bool = False  # O_SYNC writes (what NFS/ESXi and fsync-heavy clients do)
    direct: bool = False
    end_fsync: bool = False  # count dirty data of async writes
    nrfiles: int = 1


def problems(job: FioJob) -> dict[str, str]:
    """Field → what is wrong, for every field that may not reach fio (empty: the job is fine)."""
    found = {}
    if not NAME.fullmatch(job.name):
        found["name"] = "Lowercase letters, digits and -, up to 40"
    if job.rw not in RW:
        found["rw"] = f"One of {', '.join(RW)}"
    if not block_ok(job.bs):
        found["bs"] = "A block size that is a multiple of 512 bytes up to 16m, like 512, 4k, 128k or 1m"
    if not SIZE.fullmatch(str(job.size)):
        found["size"] = "A size like 64m or 2g"
    if job.ioengine not in ENGINES:
        found["ioengine"] = f"One of {', '.join(ENGINES)}"
    for name, (low, high) in LIMITS.items():
        value = getattr(job, name)
        if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
            found[name] = f"A whole number from {low} to {high}"
    if job.rwmixread is not None and not (isinstance(job.rwmixread, int) and 0 <= job.rwmixread <= 100):
        found["rwmixread"] = "A percentage from 0 to 100"
    return found


def size_bytes(size: str) -> int:
    """A job size ("64m", "2g") in bytes."""
    return int(size[:-1]) * UNITS[size[-1]]


def block_ok(bs: object) -> bool:
    """fio takes any byte count for bs, but a block that is not whole 512-byte sectors measures nothing a client
    does (and fails with O_DIRECT), and one above 16 MiB is larger than any ZFS record."""
    if isinstance(bs, int) and not isinstance(bs, bool):
        bs = str(bs)  # a job saved with a byte count
    if not isinstance(bs, str) or not BLOCK.fullmatch(bs):
        return False
    unit = bs[-1] if bs[-1] in UNITS else ""
    size = int(bs.removesuffix(unit)) * UNITS[unit]
    return size % SECTOR == 0 and size <= MAX_BLOCK


def check_directory(path: str) -> str:
    if not DIRECTORY.fullmatch(path) or "/../" in f"{path}/" or path.startswith("/dev") or "/.zfs" in path:
        raise ValueError("An absolute path inside a pool (no :, .., /dev or .zfs)")
    return path


def argv(job: FioJob, directory: str, *, output: str, bw_log: str, status_interval: int = 1) -> list[str]:
    """The exact command: shared options that keep the result honest (incompressible data, per-job files, latency
    percentiles, JSON) plus the job's fields, each as its own --option=value."""
    found = problems(job)
    if found:
        raise ValueError("; ".join(f"{k}: {v}" for k, v in found.items()))
    directory, output, bw_log = check_directory(directory), check_directory(output), check_directory(bw_log)
    command = [
        "fio",
        f"--name={job.name}",
        f"--directory={directory}",
        f"--rw={job.rw}",
        f"--bs={job.bs}",
        f"--size={job.size}",
        f"--numjobs={job.numjobs}",
        f"--iodepth={job.iodepth}",
        f"--ioengine={job.ioengine}",
        f"--nrfiles={job.nrfiles}",
        "--time_based",
        f"--runtime={job.runtime}",
        f"--ramp_time={job.ramp}",
        "--refill_buffers",
        "--buffer_compress_percentage=0",
        "--group_reporting",
        "--output-format=json+",
        "--percentile_list=50:95:99:99.9",
        f"--output={output}",
        f"--write_bw_log={bw_log}",
        "--log_avg_msec=1000",
        f"--status-interval={int(status_interval)}",
    ]
    if job.rwmixread is not None:
        command.append(f"--rwmixread={job.rwmixread}")
    command += [
        flag
        for flag, on in (("--sync=1", job.sync), ("--direct=1", job.direct), ("--end_fsync=1", job.end_fsync))
        if on
    ]
    return command


def reads(job: FioJob) -> bool:
    return job.rw in ("read", "randread", "randrw", "rw")


def layout_argv(job: FioJob, directory: str) -> list[str]:
    """Lay out a job's files without measuring (so caches can be dropped between writing them and reading them)."""
    found = problems(job)
    if found:
        raise ValueError("; ".join(f"{k}: {v}" for k, v in found.items()))
    return [
        "fio",
        f"--name={job.name}",
        f"--directory={check_directory(directory)}",
        f"--rw={job.rw}",
        f"--bs={job.bs}",
        f"--size={job.size}",
        f"--numjobs={job.numjobs}",
        f"--nrfiles={job.nrfiles}",
        "--refill_buffers",
        "--buffer_compress_percentage=0",
        "--create_only=1",
    ]


@dataclass(frozen=True)
class Side:
    """One direction of a result."""

    bw_bytes: int  # per second
    iops: float
    io_bytes: int
    runtime_ms: int
    lat_mean_ns: float
    p50_ns: int | None
    p95_ns: int | None
    p99_ns: int | None
    p999_ns: int | None


@dataclass(frozen=True)
class FioResult:
    version: str
    read: Side | None
    write: Side | None

    def as_dict(self) -> dict:
        return {
            "version": self.version,
            **{
                d: ({f.name: getattr(s, f.name) for f in fields(Side)} if s else None)
                for d, s in (("read", self.read), ("write", self.write))
            },
        }


def _side(raw: dict) -> Side | None:
    if not raw or not raw.get("io_bytes"):
        return None
    percentiles = (raw.get("clat_ns") or {}).get("percentile") or {}
    p = [percentiles.get(k) for k in PERCENTILES]
    return Side(
        bw_bytes=int(raw["bw_bytes"]),
        iops=float(raw["iops"]),
        io_bytes=int(raw["io_bytes"]),
        runtime_ms=int(raw["runtime"]),
        lat_mean_ns=float((raw.get("lat_ns") or raw.get("clat_ns") or {}).get("mean", 0)),
        p50_ns=p[0],
        p95_ns=p[1],
        p99_ns=p[2],
        p999_ns=p[3],
    )


def documents(text: str) -> list[dict]:
    """The JSON documents in a fio output file: with --status-interval fio appends one per interval (live
    progress), the last is the final result. Notes fio prints between them are skipped."""
    decoder, found, at = json.JSONDecoder(), [], text.find("{")
    while at != -1:
        try:
            doc, end = decoder.raw_decode(text, at)
        except ValueError:
            break
        found.append(doc)
        at = text.find("{", end)
    return found


def parse_result(text: str) -> FioResult:
    """The last document of a fio --output-format=json(+) output with --group_reporting (one job entry sums
    every job)."""
    found = documents(text)
    if not found:
        raise ValueError("no fio JSON in the output")
    data = found[-1]
    job = data["jobs"][0]
    return FioResult(version=data.get("fio version", ""), read=_side(job.get("read")), write=_side(job.get("write")))


def split_output(text: str) -> tuple[str, str]:
    """The JSON output file and the bandwidth log read in one `cat`: the log (numbers and commas) follows the last
    closing brace."""
    end = text.rfind("}") + 1
    return text[:end], text[end:]


def parse_bw_log(text: str) -> list[tuple[int, int, int]]:
    """A --write_bw_log file: (milliseconds, KiB/s, direction 0 read / 1 write) per line."""
    points = []
    for line in text.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) >= 3 and parts[0].isdigit() and parts[1].isdigit():
            points.append((int(parts[0]), int(parts[1]), int(parts[2])))
    return points
