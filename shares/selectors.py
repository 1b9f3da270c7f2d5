"""Reads for shares: from the rows and the last observed status, never from the host on a page load."""

from django.db.models import Q

from hostlib.posix import SHARED_GROUP
from pools.selectors import snapshot_counts_of
from shares.models import NfsExport, SambaUser, ShareSettings, ShareStatus, SmbShare


def share_settings(*, host) -> ShareSettings:
    return ShareSettings.objects.get_or_create(host=host)[0]


def share_server_values(*, host) -> dict[str, str]:
    """The server settings base tuning may set, as strings (as tuning compares and records them)."""
    row = share_settings(host=host)
    return {
        "smb_min_protocol": row.smb_min_protocol,
        "smb_multichannel": "yes" if row.smb_multichannel else "no",
        "nfs_threads": str(row.nfs_threads),
    }


def share_overview(*, host) -> dict:
    """The shares page: SMB shares with each dataset's snapshot count (Previous Versions shows up to 512),
    NFS exports, Samba users and the last connection status."""
    smb = list(SmbShare.objects.filter(host=host))
    counts = snapshot_counts_of(host=host, names=[s.dataset for s in smb])
    for share in smb:
        share.snapshot_count = counts.get(share.dataset, 0)
    return {
        "smb_shares": smb,
        "nfs_exports": list(NfsExport.objects.filter(host=host)),
        "samba_users": list(SambaUser.objects.filter(host=host)),
        "status": ShareStatus.objects.filter(host=host).first(),
    }


def share_users_of(*, host, dataset: str) -> list[str]:
    """Shares and exports on this dataset (or pool) and below it."""
    below = Q(dataset=dataset) | Q(dataset__startswith=f"{dataset}/")
    return [f"SMB share {s.name}" for s in SmbShare.objects.filter(below, host=host)] + [
        f"NFS export {e.path}" for e in NfsExport.objects.filter(below, host=host)
    ]


def share_folder_accounts(*, host) -> tuple[list[str], list[str]]:
    """Who may own a share's folder (root or a Samba user) and which groups it may have (the shared group, root,
    or a Samba user's own group: useradd makes one of the same name)."""
    people = list(SambaUser.objects.filter(host=host).order_by("username").values_list("username", flat=True))
    return ["root", *people], [SHARED_GROUP, "root", *people]


def smb_share_named(*, host, name: str) -> SmbShare | None:
    return SmbShare.objects.filter(host=host, name=name).first()


def nfs_export_at(*, host, path: str) -> NfsExport | None:
    return NfsExport.objects.filter(host=host, path=path).first()


def writable_shares(*, host) -> tuple[list[SmbShare], list[NfsExport]]:
    """The host's SMB shares and NFS exports that are not read-only."""
    return list(SmbShare.objects.filter(host=host, read_only=False)), list(
        NfsExport.objects.filter(host=host, read_only=False)
    )
