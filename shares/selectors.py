"""Reads for shares: from the rows and the last observed status, never from the host on a page load."""

import re

from django.db.models import Q

from hostlib.posix import SHARED_GROUP
from pools.selectors import datasets_named, is_mounted
from shares.models import NfsExport, SambaUser, ShareSettings, ShareStatus, SmbShare


def listed_words(text: str) -> list[str]:
    """A list as typed (valid users, hosts): words apart by spaces or commas; one in double quotes may hold spaces
    ("@LAB\\Domain Users"). An unbalanced quote is the service's to refuse (smb_share_save_start)."""
    return [quoted or word for quoted, word in re.findall(r'"([^"]*)"|([^\s,"]+)', text or "") if quoted or word]


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


# Why a share is off, as the pages and the API say it ("Off — dataset locked").
LOCKED, NOT_MOUNTED, MISSING = "dataset locked", "dataset not mounted", "dataset not found"


def off_reason(dataset) -> str:
    """Why a share of this dataset serves nothing ('' when it is offered): smbd refuses the share and nfsd does not
    export it while the dataset's mountpoint is not a mounted filesystem (root preexec and exports' mountpoint).
    From the inventory as last read; `mounted` counts once the inventory reads that property."""
    if dataset is None:
        return MISSING
    if dataset.locked:
        return LOCKED
    if not is_mounted(dataset):
        return NOT_MOUNTED
    return ""


def shares_with_state(rows: list) -> list:
    """Marks each SMB share or NFS export with offered, off_reason and snapshot_count from its dataset as the
    inventory last read it: one query per host among the rows (a page shows one host), never one per row. Rows come
    with their host (select_related)."""
    hosts, wanted = {}, {}
    for row in rows:
        hosts.setdefault(row.host_id, row.host)
        wanted.setdefault(row.host_id, set()).add(row.dataset)
    found = datasets_named(host_ids=list(hosts), names=set().union(*wanted.values()) if wanted else set())
    for row in rows:
        dataset = found.get((row.host_id, row.dataset))
        row.off_reason = off_reason(dataset)
        row.offered = not row.off_reason
        row.snapshot_count = dataset.snapshot_count if dataset else 0
    return rows


def share_overview(*, host) -> dict:
    """The shares page: SMB shares and NFS exports, each marked offered or off (a locked or unmounted dataset) with
    its dataset's snapshot count (Previous Versions shows up to 512), Samba users and the last connection status."""
    smb = list(SmbShare.objects.filter(host=host).select_related("host"))
    nfs = list(NfsExport.objects.filter(host=host).select_related("host"))
    shares_with_state([*smb, *nfs])
    return {
        "smb_shares": smb,
        "nfs_exports": nfs,
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


def _at_or_below(datasets: list[str]) -> Q:
    q = Q(pk__in=[])
    for name in datasets:
        q |= Q(dataset=name) | Q(dataset__startswith=f"{name}/")
    return q


def share_users_by_dataset(*, host) -> dict[str, list[str]]:
    """{dataset: the shares and exports on it} for the whole host (two queries)."""
    found: dict[str, list[str]] = {}
    # ordered by their own column: the models' ordering (by host name first) joins the hosts for one host's rows
    for s in SmbShare.objects.filter(host=host).only("dataset", "name").order_by("name"):
        found.setdefault(s.dataset, []).append(f"SMB share {s.name}")
    for e in NfsExport.objects.filter(host=host).only("dataset", "path").order_by("path"):
        found.setdefault(e.dataset, []).append(f"NFS export {e.path}")
    return found


def smb_share_names_under(*, host, dataset: str) -> list[str]:
    """The SMB shares on this dataset and below it."""
    return list(SmbShare.objects.filter(_at_or_below([dataset]), host=host).values_list("name", flat=True))


def nfs_exports_under(*, host, datasets: list[str]) -> list[str]:
    """The paths of the NFS exports on these datasets and below them."""
    return list(NfsExport.objects.filter(_at_or_below(datasets), host=host).values_list("path", flat=True))
