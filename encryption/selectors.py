"""Reads for encryption: the host's encryption roots with what each unlocks, its key and who uses it."""

from encryption.models import KeyEscrow
from pools import selectors as pools
from shares import selectors as shares


def roots_overview(*, host) -> list[dict]:
    """One row per encryption root: the dataset, its key status, format and location, how many datasets it
    unlocks, whether Tarn holds its key (escrow) and the shares on it (four queries, however many roots)."""
    if host is None:
        return []
    members = pools.encryption_members(host=host)
    escrowed = set(KeyEscrow.objects.filter(host=host).values_list("dataset", flat=True))
    users = shares.share_users_by_dataset(host=host)
    rows = []
    for root, below in members.items():
        head = next((d for d in below if d.name == root), None)
        if head is None:
            continue  # its root is not in the inventory (a replica whose root is elsewhere): shown on its own page
        rows.append(
            {
                "dataset": head,
                "name": root,
                "encryption": head.encryption,
                "locked": head.locked,
                "members": len(below),
                "escrowed": root in escrowed,
                "shares": [
                    u for name, found in users.items() if name == root or name.startswith(f"{root}/") for u in found
                ],
            }
        )
    return rows


def escrow_all():
    return KeyEscrow.objects.select_related("host")
