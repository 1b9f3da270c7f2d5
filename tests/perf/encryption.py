"""Issue 26 figures, on the lab guest (emulated: absolute MiB/s are not a NAS's, the ratio is the figure):

- what native encryption costs: fio sequential 1M writes then reads of one file on an encrypted dataset (made by
  encryption.services, aes-256-gcm, passphrase) and on a plain one, same pool, recordsize=1M, compression=off,
  atime=off, interleaved ROUNDS times (which goes first alternates). Writes are size-based with end_fsync=1;
  before the reads the pool is exported and imported and the page cache dropped, so the file comes from the disk,
  not the ARC (the file is smaller than the guest's ARC: without that the reads would measure RAM). Figures are
  fio's own bandwidth; the ICP's AES and GCM implementations in use are printed with them;
- one passphrase unlocking 100 datasets (an encryption root and 99 children): encryption.services.unlock_start end
  to end (the key checked with load-key -n, loaded, zfs mount -R, the inventory re-read), and the zfs load-key +
  zfs mount -R part alone through the same transport. Goal <= 10 s.

`make perf encryption` runs both at full size (TARN_PERF_ENCRYPTION_MIB, default 192 MiB a file;
TARN_PERF_ENCRYPTION_ROUNDS, default 3); `make perf encryption.check` a tiny version of both (16 MiB, 1 round,
5 datasets) that only shows the path works."""

import os
import statistics
import time

from tests.perf.foundation import lab_host, run_operations_inline

MIB = int(os.environ.get("TARN_PERF_ENCRYPTION_MIB", "192"))
ROUNDS = int(os.environ.get("TARN_PERF_ENCRYPTION_ROUNDS", "3"))
UNLOCK_ROUNDS = int(os.environ.get("TARN_PERF_ENCRYPTION_UNLOCK_ROUNDS", "2"))
DATASETS = 100  # the encryption root and 99 children
POOL, ENCRYPTED, PLAIN = "tank", "tank/enc", "tank/plain"
DISK = "/dev/disk/by-id/virtio-zfsdisk1"
PASSPHRASE = "perf-passphrase-issue-26"  # not a secret: the lab guest is thrown away
PROPS = {"recordsize": "1M", "compression": "off", "atime": "off"}
ICP = "/sys/module/zfs/parameters/icp_*_impl"

_READY: dict = {}


def _succeeded(op) -> None:
    op.refresh_from_db()
    assert op.status == "succeeded", (op.kind, op.status, op.message)


def _setup():
    """The pool on one lab disk, the encrypted dataset (through Tarn) and the plain one: once per process."""
    if _READY:
        return _READY
    found = lab_host("encryption")
    if found is None:
        return None
    lab, host = found
    run_operations_inline()
    from appliance.connect import transport_for
    from encryption import services
    from pools.services import inventory_refresh

    props = " ".join(f"-o {k}={v}" for k, v in PROPS.items())
    lab.sh(f"zpool create -f -o ashift=12 {POOL} {DISK} && zfs create {props} {PLAIN}")
    inventory_refresh(host=host)
    _succeeded(
        services.encrypted_create_start(
            host=host, user=None, name=ENCRYPTED, passphrase=PASSPHRASE, passphrase_confirm=PASSPHRASE, props=PROPS
        )
    )
    _READY.update(lab=lab, host=host, t=transport_for(host))
    return _READY


def _done(ctx) -> None:
    """The guest back to its clean state (the next group's lab_host resets it anyway)."""
    ctx["lab"].reset()
    _READY.clear()


def _icp(lab) -> tuple[str, str, str]:
    """(aes_impl, gcm_impl) in use, as hostlib.facts reads them, and the raw lines they come from."""
    from hostlib import facts

    raw = lab.sh(f"grep -H . {ICP}")
    lines = dict(line.split(":", 1) for line in raw.splitlines() if ":" in line)
    aes = facts.parse_impl(lines.get(facts.ICP_IMPLS[0], ""), "aes")
    gcm = facts.parse_impl(lines.get(facts.ICP_IMPLS[1], ""), "gcm")
    return aes, gcm, " | ".join(line for line in raw.splitlines() if line)


def _fio(t, rw: str, dataset: str, mib: int) -> tuple[float, float]:
    """One size-based pass over /<dataset>/seq.dat: (fio's bandwidth in MiB/s, the command's wall seconds)."""
    from hostlib import fio

    argv = [
        "fio",
        f"--name=seq-{rw}",
        f"--filename=/{dataset}/seq.dat",
        f"--rw={rw}",
        "--bs=1M",
        f"--size={mib}m",
        "--numjobs=1",
        "--ioengine=psync",
        "--refill_buffers",
        "--buffer_compress_percentage=0",
        "--output-format=json",
        *(["--end_fsync=1"] if rw == "write" else []),
    ]
    started = time.monotonic()
    text = t.run(argv, mutating=True, timeout=1800).stdout
    wall = time.monotonic() - started
    parsed = fio.parse_result(text)
    side = parsed.write if rw == "write" else parsed.read
    return side.bw_bytes / (1 << 20), wall


def _cold(ctx) -> int:
    """Nothing of the pool left in the ARC or the page cache: export, drop caches, import, load the key, mount.
    Returns the ARC's size afterwards."""
    from hostlib import kernel, zfs

    lab, t = ctx["lab"], ctx["t"]
    lab.sh(f"zpool export {POOL}", timeout=600)
    kernel.write(t, "sysctl", "vm.drop_caches", "3")
    lab.sh(f"zpool import -d /dev/disk/by-id {POOL}", timeout=600)
    zfs.load_key(t, ENCRYPTED, keyformat="passphrase", secret=PASSPHRASE)
    zfs.mount_tree(t, ENCRYPTED)  # the plain one is mounted by the import; this one waits for its key
    return zfs.arcstats(t).get("size", 0)


def _throughput(mib: int, rounds: int):
    ctx = _setup()
    if ctx is None:
        return
    lab, t = ctx["lab"], ctx["t"]
    aes, gcm, raw = _icp(lab)
    print(
        f"# encryption throughput: fio 1M sequential, one {mib} MiB file a dataset, psync, incompressible; write "
        f"size-based with end_fsync=1; then export/drop_caches/import before the read; {rounds} interleaved "
        f"rounds on {ENCRYPTED} (aes-256-gcm, passphrase) and {PLAIN}, both {PROPS}. ICP: {raw}",
        flush=True,
    )
    bw = {(kind, rw): [] for kind in ("encrypted", "plain") for rw in ("write", "read")}
    for i in range(rounds):
        order = [("encrypted", ENCRYPTED), ("plain", PLAIN)][:: 1 if i % 2 == 0 else -1]  # drift hits both
        for kind, dataset in order:
            rate, wall = _fio(t, "write", dataset, mib)
            bw[kind, "write"].append(rate)
            print(f"# round {i + 1} {kind} write {rate:.1f} MiB/s (fio), {wall:.1f} s wall", flush=True)
        arc = _cold(ctx)
        print(f"# round {i + 1}: pool exported and imported, caches dropped: ARC {arc >> 20} MiB", flush=True)
        for kind, dataset in order:
            rate, wall = _fio(t, "read", dataset, mib)
            bw[kind, "read"].append(rate)
            print(f"# round {i + 1} {kind} read {rate:.1f} MiB/s (fio), {wall:.1f} s wall", flush=True)
        lab.sh(f"rm -f /{ENCRYPTED}/seq.dat /{PLAIN}/seq.dat")
    for i in range(rounds):
        for rw in ("write", "read"):
            for kind in ("encrypted", "plain"):
                yield f"encryption_round{i + 1}_{kind}_{rw}", bw[kind, rw][i], "MiB/s", f"{mib} MiB, fio's figure"
    for rw in ("write", "read"):
        enc, plain = statistics.median(bw["encrypted", rw]), statistics.median(bw["plain", rw])
        pairs = ", ".join(f"{e / p:.2f}" for e, p in zip(bw["encrypted", rw], bw["plain", rw], strict=True))
        yield f"encryption_{rw}_encrypted_median", enc, "MiB/s", f"median of {rounds}"
        yield f"encryption_{rw}_plain_median", plain, "MiB/s", f"median of {rounds}"
        yield (
            f"encryption_{rw}_encrypted_to_plain",
            enc / plain,
            "x",
            f"median over median; per round {pairs}; aes_impl {aes}, gcm_impl {gcm}",
        )
    yield "encryption_icp_generic", float("generic" in (aes, gcm)), "(1 = yes)", f"aes_impl {aes}, gcm_impl {gcm}"


def _mounted(t) -> int:
    out = t.run(["zfs", "list", "-H", "-o", "mounted", "-r", "--", ENCRYPTED]).stdout
    return out.split().count("yes")


def _unlock(datasets: int, rounds: int):
    ctx = _setup()
    if ctx is None:
        return
    from encryption import services
    from hostlib import zfs
    from pools.services import Scope, inventory_refresh

    lab, host, t = ctx["lab"], ctx["host"], ctx["t"]
    started = time.monotonic()
    lab.sh(f"for i in $(seq -w 1 {datasets - 1}); do zfs create {ENCRYPTED}/c$i || exit 1; done", timeout=1800)
    made = time.monotonic() - started
    inventory_refresh(host=host)
    assert _mounted(t) == datasets, _mounted(t)
    print(
        f"# encryption unlock: {ENCRYPTED} and {datasets - 1} children ({made:.0f} s to make), one passphrase; "
        f"{rounds} rounds of lock_start, then unlock_start timed from the call to its operation's end; then by hand "
        "through the same SSH transport: zfs unmount -u, then load-key -n (a dry run's check), load-key, mount -R "
        "and the inventory's read of the tree timed",
        flush=True,
    )
    whole, check, load, mount, refresh = [], [], [], [], []
    for i in range(rounds):
        _succeeded(services.lock_start(host=host, user=None, root=ENCRYPTED))
        assert _mounted(t) == 0, "still mounted after lock"
        started = time.monotonic()
        op = services.unlock_start(host=host, user=None, roots=[ENCRYPTED], secret=PASSPHRASE)
        whole.append(time.monotonic() - started)
        _succeeded(op)
        assert _mounted(t) == datasets, _mounted(t)

        zfs.unmount_tree(t, ENCRYPTED, unload=True)  # as lock_run does
        for seconds, step in (
            (check, lambda: zfs.load_key(t, ENCRYPTED, keyformat="passphrase", secret=PASSPHRASE, dry_run=True)),
            (load, lambda: zfs.load_key(t, ENCRYPTED, keyformat="passphrase", secret=PASSPHRASE)),
            (mount, lambda: zfs.mount_tree(t, ENCRYPTED)),
            (refresh, lambda: inventory_refresh(host=host, scope=Scope(trees=[ENCRYPTED]))),
        ):
            started = time.monotonic()
            step()
            seconds.append(time.monotonic() - started)
        assert _mounted(t) == datasets, _mounted(t)
        print(
            f"# round {i + 1}: unlock_start {whole[-1]:.1f} s; load-key -n {check[-1]:.1f} s, load-key "
            f"{load[-1]:.1f} s, mount -R {mount[-1]:.1f} s, inventory read {refresh[-1]:.1f} s",
            flush=True,
        )
    yield f"encryption_unlock_{datasets}_datasets_worst", max(whole), "s", "unlock_start end to end; goal <= 10 s"
    yield f"encryption_unlock_{datasets}_datasets_median", statistics.median(whole), "s", f"of {rounds}"
    load_mount = [a + b for a, b in zip(load, mount, strict=True)]
    yield "encryption_load_key_and_mount_median", statistics.median(load_mount), "s", "zfs load-key + zfs mount -R"
    yield "encryption_load_key_median", statistics.median(load), "s", "PBKDF2 of the passphrase, key loaded"
    yield "encryption_mount_r_median", statistics.median(mount), "s", f"zfs mount -R of {datasets} filesystems"
    yield "encryption_load_key_check_median", statistics.median(check), "s", "load-key -n: a dry run's check"
    yield "encryption_inventory_read_median", statistics.median(refresh), "s", f"the tree of {datasets} re-read"


def throughput_figures():
    yield from _throughput(MIB, ROUNDS)


def unlock_figures():
    try:
        yield from _unlock(DATASETS, UNLOCK_ROUNDS)
    finally:
        if _READY:
            _done(_READY)


def check():
    """Tiny: the whole path, quickly (its figures mean nothing)."""
    try:
        yield from _throughput(16, 1)
        yield from _unlock(5, 1)
    finally:
        if _READY:
            _done(_READY)


CHECKS = [throughput_figures, unlock_figures]
QUICK = [check]  # run only when named: `make perf encryption.check`
