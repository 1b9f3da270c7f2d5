"""Reads for encryption: the host's encryption roots with what each unlocks, its key and who uses it."""

from datetime import UTC, datetime, timedelta

from django.utils import timezone

from appliance.choices import OperationStatus
from appliance.fleet import OK, WARN, Cell
from appliance.models import Operation
from encryption.models import KeyEscrow, KeyExport, RetiredKey
from pools import selectors as pools
from shares import selectors as shares


def roots_overview(*, host) -> list[dict]:
    """One row per encryption root: the dataset, its key status, format and location, how many datasets it
    unlocks, whether Tarn holds its key (escrow) and the shares on it (four queries, however many roots)."""
    if host is None:
        return []
    members = pools.encryption_members(host=host)
    escrowed = set(KeyEscrow.objects.filter(host=host).order_by().values_list("dataset", flat=True))  # no join
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


def key_formats(*, host) -> dict[str, str]:
    """{encryption root: its keyformat} on host, as the inventory read them (what a typed secret is checked for)."""
    if host is None:
        return {}
    return {d.name: d.encryption.get("format", "") for d in pools.encryption_roots(host=host)}


def escrow_all():
    return KeyEscrow.objects.select_related("host")


def exports(*, host, user):
    """The key exports this admin made on host and has not downloaded yet, newest first."""
    if host is None:
        return KeyExport.objects.none()
    return exports_all(user=user).filter(host=host)


def retired_keys(*, host):
    """The old keys changes of key left on host (kept until an admin removes them)."""
    if host is None:
        return RetiredKey.objects.none()
    return retired_keys_all().filter(host=host)


def retired_keys_all():
    return RetiredKey.objects.select_related("host", "retired_by")


# The operations that lock and unlock a root (encryption.services); a root either touched since boot was not left
# locked by the boot.
LOCK, UNLOCK = "encryption.lock", "encryption.unlock"


def booted_at(host) -> datetime | None:
    """When the host last came up, as its facts last read it (/proc/stat's btime); None when not known."""
    btime = (host.facts or {}).get("btime")
    return datetime.fromtimestamp(btime, tz=UTC) if btime else None


def locked_roots(*, hosts) -> list[dict]:
    """The encryption roots locked now on these hosts, in host and name order: {host, dataset, name, members (the
    datasets below it that it locks too), booted, since, kept}. since: when it was locked if known (Tarn's last lock
    of it since boot; else the boot, when Tarn has not locked or unlocked it since); kept: Tarn locked or unlocked it
    since boot, so it is the admin's doing, not a root the boot left locked. One inventory query, and one of
    operations when a root is locked."""
    found = []
    by_host = pools.encryption_members_by_host(hosts=hosts)
    for host in hosts:
        for root, below in by_host.get(host.pk, {}).items():
            head = next((d for d in below if d.name == root), None)  # None: a replica whose root is elsewhere
            if head is not None and head.locked:
                found.append((host, head, [d.name for d in below if d is not head]))
    boots = {host.pk: booted_at(host) for host, _, _ in found}
    last: dict[tuple[int, str], tuple[str, datetime]] = {}  # (host id, root): Tarn's last lock or unlock since boot
    known = [b for b in boots.values() if b]
    if known:
        ops = Operation.objects.filter(
            host__in=[h for h, b in boots.items() if b],
            kind__in=[LOCK, UNLOCK],
            status=OperationStatus.SUCCEEDED,
            finished_at__gte=min(known),
        ).order_by("finished_at", "id")
        for host_id, kind, params, finished in ops.values_list("host_id", "kind", "params", "finished_at"):
            if finished >= boots[host_id] and not params.get("dry_run"):
                for root in [params.get("root")] if kind == LOCK else params.get("roots", []):
                    last[(host_id, root)] = (kind, finished)
    rows = []
    for host, d, members in found:
        kind, finished = last.get((host.pk, d.name), ("", None))
        since = finished if kind == LOCK else None if kind else boots[host.pk]
        rows.append(
            {
                "host": host,
                "dataset": d,
                "name": d.name,
                "members": members,
                "booted": boots[host.pk],
                "since": since,
                "kept": bool(kind),
            }
        )
    return rows


def dashboard_locked(*, hosts) -> dict:
    """The dashboard's panel: the encryption roots locked on these hosts, and since when (nothing when none are)."""
    rows = locked_roots(hosts=hosts)
    return {"extra_panels": [("encryption/_dashboard.html", {"roots": rows})]} if rows else {}


def exports_all(*, user):
    """The exports this user made, not yet downloaded, within the last 24 hours (an older one is deleted within the
    hour): only the admin who made an export may see or download (and so consume) it."""
    since = timezone.now() - timedelta(hours=24)
    mine = KeyExport.objects.filter(user=user, user__isnull=False, created_at__gte=since)
    return mine.defer("data").select_related("host", "user")


def fleet_locked(*, hosts) -> dict:
    """Per host with encrypted datasets: its encryption roots locked now (one inventory query)."""
    cells = {}
    for host_id, roots in pools.encryption_members_by_host(hosts=hosts).items():
        locked = [root for root, below in roots.items() if any(d.name == root and d.locked for d in below)]
        if locked:
            cells[host_id] = Cell(f"{len(locked)} locked", -len(locked), WARN, title=", ".join(locked[:10]))
        else:
            cells[host_id] = Cell(f"{len(roots)} unlocked", 0, OK)
    return cells
