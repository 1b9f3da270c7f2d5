"""Browsing a snapshot and a file's versions: the place checked against the inventory (a mounted filesystem of the
host, a snapshot it has), the path checked as names (hex of their bytes, no '..'), then read on the NAS by the
snapshot reader (hostlib.snapfiles). Reads only: no Operation (nothing changes), errors name the field."""

import re
from dataclasses import dataclass

from django.conf import settings
from django.core.exceptions import ValidationError

from appliance.checks import host_said
from appliance.choices import AuditKind
from appliance.connect import transport_for
from appliance.models import AuditEntry
from hostlib import snapfiles
from hostlib.errors import HostError
from pools import selectors as pools
from recovery.choices import MAX_DEPTH, MAX_NAME, PAGE, VERSIONS_MOST, VERSIONS_PASS

HEX = re.compile(r"(?:[0-9a-f]{2})+")


@dataclass(frozen=True)
class Where:
    """A folder (or file) of a dataset, live (snapshot "") or in one of its snapshots; parts: hex of each name."""

    host: object
    dataset: object  # the inventory's row
    mount: str
    snapshot: str
    parts: tuple[str, ...]

    @property
    def names(self) -> list[str]:
        return [snapfiles.shown(bytes.fromhex(p)) for p in self.parts]

    @property
    def path(self) -> str:
        """The parts as the pages pass them: hex names joined by '/'."""
        return "/".join(self.parts)

    def crumbs(self) -> list[tuple[str, str]]:
        """(name shown, path) of each folder on the way, for the breadcrumb."""
        return [(n, "/".join(self.parts[: i + 1])) for i, n in enumerate(self.names)]

    def child(self, raw: str) -> str:
        return "/".join((*self.parts, raw))


def parts_of(path: str) -> tuple[str, ...]:
    """A path as the pages and the API pass it (hex names joined by '/'), checked: each name plain."""
    if not path:
        return ()
    parts = tuple(path.split("/"))
    if len(parts) > MAX_DEPTH:
        raise ValidationError({"path": f"More than {MAX_DEPTH} folders deep."})
    for part in parts:
        if not HEX.fullmatch(part):
            raise ValidationError({"path": "Each name is given as the hex of its bytes (a/b: 61/62)."})
        name = bytes.fromhex(part)
        if name in (b".", b"..") or b"/" in name or b"\0" in name or len(name) > MAX_NAME:
            raise ValidationError({"path": f"{snapfiles.shown(name)[:60]!r} is not a name: no '.', '..', '/' or NUL."})
    return parts


def text_path(text: str) -> str:
    """A path typed as text ("team/report.txt") as the hex path the pages pass."""
    names = [n for n in text.strip("/").split("/") if n]
    return "/".join(snapfiles.raw_of(n) for n in names)


def where(*, host, dataset: str, snapshot: str = "", path: str = "") -> Where:
    """Refused, naming the field: a dataset that is not a mounted filesystem of the host, a snapshot it does not have
    (destroyed meanwhile: the inventory says so once read again), a path that is not plain names."""
    row = pools.mounted_filesystem(host=host, name=dataset) if host else None
    if row is None:
        raise ValidationError({"dataset": f"No mounted filesystem {dataset[:100]!r} on this host."})
    if snapshot and pools.snapshot_of(dataset=row, name=snapshot) is None:
        raise ValidationError({"snapshot": f"{row.name} has no snapshot {snapshot[:100]!r} (destroyed?)."})
    return Where(host, row, row.mountpoint, snapshot, parts_of(path))


def _said(exc: HostError, key: str = "path") -> ValidationError:
    """What the NAS said, on the field that asked (a snapshot gone since the inventory read it: on the snapshot)."""
    return host_said(exc, "snapshot" if str(exc).startswith("refusing snapshot ") else key)


def folder_page(*, where: Where, page: int = 1, per_page: int = PAGE) -> snapfiles.Page:
    """One page of the folder (folders first, then by name); in a snapshot, each entry compared with the live one."""
    page = max(1, int(page))
    try:
        t = transport_for(where.host, read_only=True)
        return snapfiles.folder(t, where.mount, where.snapshot or None, list(where.parts),
                                offset=(page - 1) * per_page, limit=per_page)  # fmt: skip
    except HostError as exc:
        raise _said(exc) from None


def entry_of(*, where: Where) -> snapfiles.Entry:
    """The snapshot's entry at the path, compared with the live one."""
    try:
        return snapfiles.entry(transport_for(where.host, read_only=True), where.mount, where.snapshot,
                               list(where.parts))  # fmt: skip
    except HostError as exc:
        raise _said(exc) from None


@dataclass(frozen=True)
class Version:
    """One version of the path: the snapshots holding it (newest and oldest of them, and how many) and its stamp;
    stamp None: the path was not there."""

    newest: str
    oldest: str
    count: int
    stamp: list | None

    @property
    def size(self) -> int | None:
        return self.stamp[1] if self.stamp else None

    @property
    def mtime(self) -> float | None:
        return self.stamp[3] / 1e9 if self.stamp else None


@dataclass(frozen=True)
class VersionPass:
    live: list | None
    versions: list[Version]
    looked: int  # snapshots looked into by this pass
    offset: int
    total: int  # snapshots the dataset has
    most_mounted: int
    missing: list[str]

    @property
    def live_size(self) -> int | None:
        return self.live[1] if self.live else None

    @property
    def next_offset(self) -> int | None:
        end = self.offset + self.looked
        return end if end < self.total else None


def versions(*, where: Where, offset: int = 0, limit: int = VERSIONS_PASS) -> VersionPass:
    """The snapshots in which the path differs, newest first: the dataset's snapshots from offset, at most limit of
    them (VERSIONS_MOST at most) looked into, one mounted at a time. Consecutive snapshots with the same stamp are
    one version."""
    if not where.parts:
        raise ValidationError({"path": "Name a file or folder."})
    if not 1 <= limit <= VERSIONS_MOST:
        raise ValidationError({"limit": f"Between 1 and {VERSIONS_MOST} snapshots a pass."})
    offset = max(0, int(offset))
    snapshots = pools.snapshots_of(dataset=where.dataset)
    total = snapshots.count()
    names = list(snapshots.values_list("name", flat=True)[offset : offset + limit])
    try:
        found = snapfiles.versions(transport_for(where.host, read_only=True), where.mount, list(where.parts), names)
    except HostError as exc:
        raise _said(exc) from None
    grouped: list[Version] = []
    for seen in found.snapshots:
        if seen.get("missing"):
            continue
        stamp = seen["stamp"]
        if grouped and grouped[-1].stamp == stamp:
            last = grouped[-1]
            grouped[-1] = Version(last.newest, seen["snapshot"], last.count + 1, stamp)
        else:
            grouped.append(Version(seen["snapshot"], seen["snapshot"], 1, stamp))
    missing = [s["snapshot"] for s in found.snapshots if s.get("missing")]
    return VersionPass(found.live, grouped, len(names), offset, total, found.most_mounted, missing)


@dataclass(frozen=True)
class Download:
    name: str  # as text, escaped
    raw: bytes
    size: int
    chunks: object  # an iterator of bytes


def download(*, where: Where, user) -> Download:
    """A regular file of a snapshot, read from the NAS snapshots.READ_CHUNK at a time as the response is sent (never
    whole in memory), up to TARN_DOWNLOAD_MAX_MB; audited (who, which file, how big)."""
    if not where.snapshot or not where.parts:
        raise ValidationError({"path": "Pick a file inside a snapshot."})
    t = transport_for(where.host, read_only=True)
    args = (where.mount, where.snapshot, list(where.parts))
    try:
        size, first = snapfiles.read(t, *args, offset=0, length=snapfiles.READ_CHUNK)
    except HostError as exc:
        raise _said(exc) from None
    most = settings.TARN_DOWNLOAD_MAX_MB << 20
    if size > most:
        raise ValidationError({"path": f"{size >> 20} MiB is more than the {most >> 20} MiB a download may be "
                                       "(TARN_DOWNLOAD_MAX_MB): restore it beside the live copy instead."})  # fmt: skip
    # the file's name in params (an admin's to read in the audit log), not in argv (everyone's): file names are data
    AuditEntry.objects.create(kind=AuditKind.COMMAND, user=user, username=getattr(user, "username", ""),
                              host_name=where.host.name, params={"path": "/".join(where.names)[:1000]},
                              argv=["snapshot-download", f"{where.dataset.name}@{where.snapshot}", str(size)])  # fmt: skip

    def chunks():
        yield first
        offset = len(first)
        while offset < size:
            _, data = snapfiles.read(t, *args, offset=offset, length=snapfiles.READ_CHUNK)
            if not data:
                return
            offset += len(data)
            yield data

    raw = bytes.fromhex(where.parts[-1])
    return Download(where.names[-1], raw, size, chunks())


@dataclass(frozen=True)
class ChangeRow:
    change: str
    type: str
    path: str  # below the mount point, as text (escaped)
    new_path: str
    links: int | None
    at: float


def changes(*, where: Where, since: str, to: str = "", page: int = 1, per_page: int = PAGE):
    """What changed under the folder between @since and @to (a later snapshot, or "" for now): one page, newest
    first as zfs lists them, and the counts by change. Refused, naming the field: a snapshot the dataset does not
    have, @to not later than @since."""
    snapshots = {s.name: s for s in pools.snapshots_of(dataset=where.dataset).filter(name__in=[since, to])}
    if since not in snapshots:
        raise ValidationError({"since": f"{where.dataset.name} has no snapshot {since[:100]!r}."})
    if to and to not in snapshots:
        raise ValidationError({"to": f"{where.dataset.name} has no snapshot {to[:100]!r}."})
    if to and snapshots[to].createtxg <= snapshots[since].createtxg:
        raise ValidationError({"to": f"@{to} is not later than @{since}."})
    page = max(1, int(page))
    name = where.dataset.name
    try:
        found = snapfiles.changes(transport_for(where.host, read_only=True), where.mount, f"{name}@{since}",
                                  f"{name}@{to}" if to else "", prefix=list(where.parts),
                                  offset=(page - 1) * per_page, limit=per_page)  # fmt: skip
    except HostError as exc:
        raise _said(exc, "since") from None
    base = where.mount.rstrip("/").encode() + b"/"

    def below(path: bytes | None) -> str:
        return snapfiles.shown(path[len(base) :] if path and path.startswith(base) else (path or b""))

    rows = [ChangeRow(c.change, c.type, below(c.path), below(c.new_path), c.links, c.at) for c in found.changes]
    return rows, found
