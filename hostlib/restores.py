"""A restore out of a snapshot on the host: tarn-restore (hostlib/restore_helper.py) as a transient unit that outlives
Tarn's worker, its arguments in a root-only file (never in the unit's command line: systemd expands $ and % there),
its progress in a status file, stopped with `systemctl stop` (between two blocks: the half copy is removed)."""

import json

from hostlib import names, restore_helper, systemd, zfs, zpool
from hostlib.configfiles import HELPER_DIR, install_sources
from hostlib.runner import Transport, python

HELPER = f"{HELPER_DIR}/tarn-restore"
STATUS_DIR = "/run/tarn"
# It may open no device node (a name swapped for one between the listing and the open would be opened by root).
PROPERTIES = ("DevicePolicy=closed",)
HOWS = ("place", "beside")


def unit_name(job: int) -> str:
    return f"tarn-restore-{int(job)}"


def status_path(job: int) -> str:
    return f"{STATUS_DIR}/{unit_name(job)}.json"


def args_path(job: int) -> str:
    return f"{STATUS_DIR}/{unit_name(job)}.args"


def install_helper(t: Transport) -> bool:
    return install_sources(t, {HELPER: restore_helper})


def start(
    t: Transport, job: int, *, pool: str, mount: str, snapshot: str, parts: list[str], how: str, name: str = ""
) -> None:
    """Copy mount/.zfs/snapshot/<snapshot>/parts… back in place (how "place") or beside under name (hex). The pool's
    block cloning decides how data moves: cloned, or copied through a buffer (ZFS's own fallback is slower)."""
    if how not in HOWS:
        raise ValueError(f"not a way to restore: {how}")
    install_helper(t)
    t.run(["install", "-d", "-m", "0700", "--", STATUS_DIR], mutating=True)
    # no status file to remove first: a job's number is never reused, and the helper writes its first word at once
    given = {"mount": mount, "snapshot": snapshot, "parts": list(parts), "how": how, "name": name, "job": int(job),
             "cloning": zpool.block_cloning(t, pool)}  # fmt: skip
    t.write_file(args_path(job), json.dumps(given), mode=0o600)
    argv = python(HELPER, "restore", args_path(job), status_path(job))
    systemd.start(t, unit_name(job), argv, description=f"Tarn restore {int(job)}", properties=PROPERTIES)


def progress(t: Transport, job: int) -> dict:
    """The restore's last word (state copying/removing/done/stopped/failed, bytes, total, files, folders, links,
    skipped, error); {} before its first."""
    text = t.run(["cat", "--", status_path(job)], check=False, timeout=30).stdout.strip()
    try:
        return json.loads(text) if text else {}
    except ValueError:
        return {}


def state(t: Transport, job: int) -> tuple[str, str]:
    return systemd.service_state(t, unit_name(job))


def stop(t: Transport, job: int) -> None:
    systemd.stop(t, unit_name(job))


def forget(t: Transport, job: int) -> None:
    """The ended unit cleaned up: its arguments the helper removed once read; its status file, read last, goes."""
    systemd.reset_failed(t, unit_name(job))
    t.remove_file(status_path(job))


def safety_snapshot(t: Transport, dataset: str, name: str) -> str:
    """dataset@name taken now (what a restore in place replaces stays in it); its full name."""
    snapshot = f"{names.dataset_name(dataset)}@{name}"
    t.run(zfs.snapshot_argv([snapshot]), mutating=True, timeout=120)
    return snapshot
