"""Where a run's fio writes, made before and removed after: a scratch dataset under a dataset (its properties
controlled), or a scratch folder in a share mounted on the host over loopback (SMB or NFS)."""

import secrets

from benchmarks.choices import RunKind
from benchmarks.models import Run
from hostlib import mounts, posix, samba, zfs
from hostlib.errors import HostError
from hostlib.runner import Transport
from shares.selectors import nfs_export_at, smb_share_named

BENCH_USER = "tarnbench"  # SMB runs connect as Tarn's own account (a fresh random password each run)
RUN_DIR = "/run/tarn"
SCRATCH_PROPERTIES = {"compression": "off", "atime": "off"}


def prepare(t: Transport, run: Run) -> tuple[str, str, dict]:
    """Returns (the folder fio works in, where its output and logs go, what the manifest says of the target: its
    dataset's properties included)."""
    if run.kind == RunKind.STORAGE:
        argv = zfs.create_argv(run.scratch, {**SCRATCH_PROPERTIES, **run.properties}, tag=made_by(run))
        t.run(argv, mutating=True, timeout=120)
        properties = zfs.properties(t, run.scratch)  # its mountpoint among them: one command
        mountpoint = properties.get("mountpoint", "")
        if not mountpoint.startswith("/"):
            raise HostError(f"{run.scratch} is not mounted (mountpoint {mountpoint or 'unknown'}).")
        where = {"dataset": run.scratch, "mountpoint": mountpoint, "dataset_properties": properties}
        return mountpoint, mountpoint, where
    folder, argv = mount_share(t, run)
    where = {"dataset": run.target, "share": run.share, "protocol": run.kind, "mount": argv}
    return folder, RUN_DIR, {**where, "dataset_properties": zfs.properties(t, run.target)}


def encryption_of(properties: dict) -> dict | str:
    """What a run's manifest says of its dataset's encryption, from its properties as zfs read them: its cipher,
    encryption root and key format, or "off" (also for a dataset read before OpenZFS had encryption)."""
    cipher = properties.get("encryption", "off")
    if cipher in ("", "off", "-"):
        return "off"
    return {"cipher": cipher, "root": properties.get("encryptionroot", ""), "format": properties.get("keyformat", "")}


def output_files(run: Run, out: str, n: int, numjobs: int) -> tuple[str, str, list[str]]:
    """Job n's JSON output and bandwidth-log prefix, and every file fio makes of them (one log per process)."""
    prefix = f"{out}/" if run.kind == RunKind.STORAGE else f"{out}/bench-{run.pk}-"  # the scratch dataset's or /run
    output, bw_log = f"{prefix}result-{n}.json", f"{prefix}bw-{n}"
    return output, bw_log, [output, *(f"{bw_log}_bw.{k}.log" for k in range(1, numjobs + 1))]


def made_by(run: Run) -> str:
    """The mark prepare leaves on what it makes (the scratch dataset's user property, the scratch folder's
    trusted.* attribute, which no client of a share can set): clean-up removes only what carries it."""
    return f"bench-{run.pk}"


def cleanup(t: Transport, run: Run, files: list[str] = ()) -> None:
    """Remove what prepare made (whatever part of it happened: only what carries this run's mark), and the output
    files outside it. A dataset or folder of that name that was there before is left alone."""
    if run.kind == RunKind.STORAGE:
        if zfs.tag(t, run.scratch) == made_by(run):
            t.run(zfs.destroy_argv(run.scratch, recursive=True), mutating=True, check=False, timeout=300)
        return
    for path in files:
        t.remove_file(path)
    unmount_share(t, run)


def share_path(run: Run) -> str:
    if run.kind == RunKind.SMB:
        row = smb_share_named(host=run.host, name=run.share)
    else:
        row = nfs_export_at(host=run.host, path=run.share)
    if row is None:
        raise ValueError(f"{run.share} is no longer shared")
    return row.path


def mount_share(t: Transport, run: Run) -> tuple[str, list[str]]:
    """Make the scratch folder in the share, mount the share at /run/tarn/tarnbench-<id>; returns the folder as
    seen through the mount and the mount's argv."""
    t.scratch(f"{share_path(run)}/tarnbench-{run.pk}", create=True, tag=made_by(run))
    mountpoint = f"{RUN_DIR}/tarnbench-{run.pk}"
    posix.private_dir(t, RUN_DIR)  # the mount point is made new in it
    t.scratch(mountpoint, create=True)
    if run.kind == RunKind.SMB:
        credentials = f"{RUN_DIR}/bench-{run.pk}.credentials"
        password = secrets.token_urlsafe(24)
        samba.user_add(t, BENCH_USER, password)
        t.write_file(credentials, f"username={BENCH_USER}\npassword={password}\n", mode=0o600)
        try:
            argv = mounts.mount_smb(t, run.share, mountpoint, credentials=credentials)
        finally:
            t.remove_file(credentials)
    else:
        argv = mounts.mount_nfs(t, run.share, mountpoint)
    return f"{mountpoint}/tarnbench-{run.pk}", argv


def unmount_share(t: Transport, run: Run) -> None:
    """Undo mount_share, whatever of it happened: unmount, remove the mount point and the scratch folder."""
    mountpoint = f"{RUN_DIR}/tarnbench-{run.pk}"
    mounts.unmount(t, mountpoint)
    t.scratch(mountpoint, create=False)  # refused while still mounted: never removes through a mount
    t.scratch(f"{share_path(run)}/tarnbench-{run.pk}", create=False, tag=made_by(run))
    if run.kind == RunKind.SMB and samba.account(t, BENCH_USER)[1]:
        samba.user_enable(t, BENCH_USER, False)
