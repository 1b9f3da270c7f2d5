"""SMB and NFS targets: a share of the host mounted on the host itself over loopback (SMB3 vs NFS vs local, as
the napp-it tables), fio writing into a scratch folder made in the share (and removed after, with the mount).
SMB connects as Tarn's own account tarnbench (a fresh random password each run, handed to mount.cifs in a
root-only credentials file removed right after mounting, and disabled after the run); NFS as root, squashed as the
export says."""

import ipaddress
from dataclasses import asdict

from django.core.exceptions import ValidationError

from appliance.models import Host
from benchmarks.choices import RunKind
from benchmarks.models import Run
from benchmarks.selectors import storage_profile
from benchmarks.services.runs import check_jobs, queue_storage
from benchmarks.services.targets import BENCH_USER
from shares.selectors import listed_words, nfs_export_at, smb_share_named


def benchmark_share_start(
    *,
    host: Host,
    user,
    profile: str,
    protocol: str,
    share: str,
    size: str = "",
    runtime: int = 0,
    ramp: int | None = None,
    cache_ok: bool = False,
) -> Run:
    """share: an SMB share's name, or an NFS export's path."""
    chosen = storage_profile(profile)
    if chosen is None:
        raise ValidationError({"profile": "Choose one of the storage profiles."})
    row = check_share(host=host, protocol=protocol, share=share)
    jobs = check_jobs(chosen, size=size, runtime=runtime, ramp=ramp)
    run = Run(
        host=host,
        kind=protocol,
        profile=profile,
        title=f"{chosen.title} over {protocol.upper()}",
        target=row.dataset,
        share=share,
        created_by=user,
        cache_ok=cache_ok,
        jobs=[asdict(j) for j in jobs],
    )
    return queue_storage(run)


def check_share(*, host: Host, protocol: str, share: str):
    """The share a loopback run may use (its row), or a ValidationError naming what stops it: gone, admitting
    other users only, needing Kerberos, not exported to the host itself, read-only. Checked again by Run again."""
    if protocol == RunKind.SMB:
        row = smb_share_named(host=host, name=share)
        if row is None:
            raise ValidationError({"share": f"{host.name} has no SMB share {share}."})
        users = listed_words(row.valid_users)
        if users and BENCH_USER not in users:
            raise ValidationError(
                {
                    "share": f"{share} admits only {', '.join(users)}: Tarn connects as {BENCH_USER} "
                    f"(its own account); add {BENCH_USER} to the share's users to benchmark it."
                }
            )
    elif protocol == RunKind.NFS:
        row = nfs_export_at(host=host, path=share)
        if row is None:
            raise ValidationError({"share": f"{host.name} exports no {share} over NFS."})
        if row.sec != "sys":
            raise ValidationError({"share": f"{share} needs Kerberos ({row.sec}): a loopback mount cannot log in."})
        if not admits_loopback(row.clients):
            raise ValidationError(
                {
                    "share": f"{share} is not exported to this host itself: add 127.0.0.1 to its "
                    "clients to benchmark it over loopback."
                }
            )
    else:
        raise ValidationError({"protocol": "smb or nfs."})
    if row.read_only:
        raise ValidationError({"share": f"{share} is read-only: a benchmark writes its files."})
    return row


def admits_loopback(clients: str) -> bool:
    """Does an export's client list admit 127.0.0.1 (a line's host part: *, localhost, an address or network)?"""
    for line in clients.splitlines():
        spec = line.strip().split("(")[0]
        if spec in ("*", "localhost", "127.0.0.1"):
            return True
        try:
            if ipaddress.ip_address("127.0.0.1") in ipaddress.ip_network(spec, strict=False):
                return True
        except ValueError:
            continue
    return False
