"""Built-in benchmark profiles as data: what each represents and the fio fields (or iperf3 options) it runs with
(shared/reference/benchmarks.md §2). The sizes here are per job and get scaled to the target when a run is
planned (working set ≥ 2 × ARC max unless the profile is about the cache)."""

from dataclasses import dataclass, field

from hostlib.fio import FioJob


@dataclass(frozen=True)
class Profile:
    key: str
    title: str
    represents: str
    jobs: tuple[FioJob, ...] = ()  # several: a sweep, run one after the other
    iperf_streams: int = 0  # a network profile: iperf3 with this many parallel streams, both directions
    seconds: int = 10  # a network profile: each direction's duration
    caveat: str = ""  # shown beside the result: why this number may not be what it seems
    properties: dict = field(default_factory=dict)  # the scratch dataset's, e.g. a recordsize matching the I/O
    # Passes over the same files that warm a cache (the L2ARC): laid out and the caches dropped once, before the
    # first; each pass records the ARC's and the L2ARC's hit ratio. Needs a cache vdev and a working set larger
    # than the ARC that fits in ARC + L2ARC.
    warm: bool = False

    @property
    def network(self) -> bool:
        return bool(self.iperf_streams)


def _job(name, rw, bs, **kw) -> FioJob:
    return FioJob(
        name=name, rw=rw, bs=bs, size=kw.pop("size", "1g"), runtime=kw.pop("runtime", 60), ramp=kw.pop("ramp", 10), **kw
    )


def _random(bs: str) -> tuple[Profile, ...]:
    record = {"recordsize": bs.upper()}  # a record per I/O: no read-modify-write of bigger records
    return (
        Profile(
            f"randread-{bs}",
            f"Random read {bs}",
            "Small random reads: a VM image or a database",
            (_job(f"randread-{bs}", "randread", bs),),
            properties=record,
        ),
        Profile(
            f"randwrite-{bs}",
            f"Random write {bs}",
            "Small random writes",
            (_job(f"randwrite-{bs}", "randwrite", bs, end_fsync=True),),
            properties=record,
        ),
        Profile(
            f"randrw-{bs}",
            f"Random 67/33 read/write {bs}",
            "The classic mixed OLTP-like load",
            (_job(f"randrw-{bs}", "randrw", bs, rwmixread=67, end_fsync=True),),
            properties=record,
        ),
    )


MEDIA = {"recordsize": "1M"}  # big files read and written whole: fewer, larger records

BUILT_IN = (
    Profile(
        "seq-write-1",
        "Sequential write 1M, 1 stream",
        "One client copying a big file to a share",
        (_job("seq-write-1", "write", "1m", end_fsync=True),),
        properties=MEDIA,
    ),
    Profile(
        "seq-read-1",
        "Sequential read 1M, 1 stream",
        "One client reading a big file",
        (_job("seq-read-1", "read", "1m"),),
        properties=MEDIA,
    ),
    Profile(
        "seq-write-5",
        "Sequential write 1M, 5 streams",
        "Several editors or backups at once",
        (_job("seq-write-5", "write", "1m", numjobs=5, end_fsync=True),),
        properties=MEDIA,
    ),
    Profile(
        "seq-read-5",
        "Sequential read 1M, 5 streams",
        "Several clients streaming",
        (_job("seq-read-5", "read", "1m", numjobs=5),),
        properties=MEDIA,
    ),
    *_random("4k"),
    *_random("8k"),
    *_random("16k"),
    *_random("32k"),
    Profile(
        "qd-sweep",
        "Queue-depth sweep 4k random read (9 to 33)",
        "How IOPS grow with outstanding I/O",
        tuple(
            _job(f"qd-{qd}", "randread", "4k", iodepth=qd, ioengine="io_uring", runtime=30, ramp=5)
            for qd in range(9, 34, 3)
        ),
    ),
    Profile(
        "sync-write-4k",
        "Sync write 4k",
        "ZIL/SLOG latency: NFS, ESXi, databases, Time Machine",
        (_job("sync-write-4k", "randwrite", "4k", sync=True, size="256m"),),
    ),
    Profile(
        "sync-write-128k",
        "Sync write 128k",
        "Large synchronous writes",
        (_job("sync-write-128k", "randwrite", "128k", sync=True, size="1g"),),
    ),
    Profile(
        "fileserver",
        "Many small files",
        "Many users' whole-file reads and writes of small files",
        (_job("fileserver", "randrw", "64k", rwmixread=50, numjobs=8, nrfiles=200, size="256m"),),
    ),
    Profile(
        "file-size-sweep",
        "File-size sweep (4k to 64m)",
        "How throughput depends on file size",
        tuple(
            _job(
                f"files-{s}",
                "write",
                "1m" if s.endswith("m") else s,
                size=s,
                nrfiles=16,
                runtime=20,
                ramp=0,
                end_fsync=True,
            )
            for s in ("4k", "64k", "1m", "16m", "64m")
        ),
    ),
    Profile(
        "talk-randrw-128k",
        "Cross-OS talk's line (as published)",
        "Comparability with the OpenZFS cross-OS numbers only",
        (_job("talk", "randrw", "128k", iodepth=64, direct=True, size="8g", ramp=0),),
        caveat="No ioengine: fio's default is synchronous, so iodepth 64 is queue depth 1; its 8 GiB file "
        "fits in the ARC of most NAS boxes: this measures RAM. See the corrected variant.",
    ),
    Profile(
        "talk-randrw-128k-corrected",
        "Cross-OS talk's line, corrected",
        "The same mix with an async engine and a working set beyond the ARC",
        (_job("talk-fixed", "randrw", "128k", iodepth=64, ioengine="io_uring", direct=True),),
    ),
    Profile(
        "l2arc-warmup",
        "L2ARC warm-up (8 random-read passes)",
        "How reads speed up as the L2ARC fills: the ZFSBuild/Nexenta curve; needs a cache vdev",
        tuple(_job("l2arc", "randread", "128k", size="2g", runtime=300, ramp=0, numjobs=1) for _ in range(8)),
        caveat="The L2ARC fills at l2arc_write_max (8 MiB/s per cache device by default) from what the ARC "
        "evicts: the curve's slope is that rate, and a pool that is busy otherwise fills it sooner.",
        warm=True,
    ),
    Profile("iperf-1", "Network: iperf3, 1 stream, both ways", "One client's TCP throughput", iperf_streams=1),
    Profile(
        "iperf-4",
        "Network: iperf3, 4 streams, both ways",
        "Several flows: SMB multichannel, NFS nconnect",
        iperf_streams=4,
    ),
)
PROFILES = {p.key: p for p in BUILT_IN}
