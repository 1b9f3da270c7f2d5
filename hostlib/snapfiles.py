"""Files inside snapshots, read on the host by the snapshot reader (hostlib/snap_helper.py, its source sent to the
host's python3: nothing to install, and it works on a host Tarn may only read): one page of a folder of a snapshot
with the live folder beside it, and a path's versions across snapshots. Names travel as hex of their bytes, so a
name that is not UTF-8 (or holds a newline) is shown escaped and can still be named back exactly."""

import base64
import json
import time
from dataclasses import dataclass, field

from hostlib import snap_helper, zdiff
from hostlib.errors import CommandFailed, ConversationEnded, PathNotAllowed, error_for
from hostlib.runner import Transport, kept, python, source_of

shown = snap_helper.shown  # a name's bytes as text, anything not printable UTF-8 escaped
PAGE = 200  # entries a page by default (the reader takes at most 1,000)
VERSIONS_PASS = 100  # snapshots one versions pass looks into (the page goes on from where it stopped)


@dataclass(frozen=True)
class Entry:
    """One entry of a folder as lstat saw it (a link with its target, never followed); live: the live folder's
    copy is "same", "changed" or "gone" (None: not compared)."""

    name: str  # as text, anything not printable UTF-8 escaped
    raw: str  # its bytes, as hex
    type: str  # dir, file, link, char, block, fifo, socket
    size: int
    mode: int
    owner: str
    group: str
    mtime: float
    target: str = ""
    live: str | None = None

    @property
    def mode_text(self) -> str:
        return f"{self.mode:04o}"


@dataclass(frozen=True)
class Page:
    entries: list[Entry]
    total: int
    offset: int
    mounted_here: bool = False


@dataclass(frozen=True)
class Versions:
    """A path live and in each snapshot looked into (newest first): stamps that differ are different versions."""

    live: list | None
    snapshots: list[dict] = field(default_factory=list)
    most_mounted: int = 0


def raw_of(name: str) -> str:
    """The hex of a plain (UTF-8) name: how a path typed or linked by name is passed."""
    return name.encode("utf-8", "surrogateescape").hex()


def _ask(t: Transport, command: str, request: dict, timeout: float) -> dict:
    """The reader's answer: from the one kept on the host for the pages an admin goes through (its start, most of a
    page's time on a slow host, paid once), or, where none can be kept, from one run for this question."""
    if command in snap_helper.ASKED:
        started = time.monotonic()
        said = _ask_kept(t, command, request, timeout)
        if said is not None:
            return said
        timeout = max(10.0, timeout - (time.monotonic() - started))  # what is left, asked the usual way
    argv = python("-c", source_of(snap_helper), command)
    done = t.run(argv, input=json.dumps(request), timeout=timeout, check=False)
    if done.returncode == snap_helper.REFUSED:
        raise PathNotAllowed(done.stderr.strip()[-500:])
    if done.returncode != 0:
        raise error_for(["tarn-snap", command], done.returncode, done.stderr)
    try:
        return json.loads(done.stdout)
    except ValueError:
        raise CommandFailed(["tarn-snap", command], 1, "the reader printed no answer") from None


def folder(
    t: Transport, mount: str, snapshot: str | None, parts: list[str], *, offset: int = 0, limit: int = PAGE,
    live: bool = True,
) -> Page:  # fmt: skip
    """One page of mount/.zfs/snapshot/<snapshot>/parts… (snapshot None: the live folder), folders first then by
    name; parts as hex (raw_of). With live, each entry is compared with the live folder's."""
    request = {"mount": mount, "snapshot": snapshot, "parts": parts, "offset": int(offset), "limit": int(limit),
               "live": live}  # fmt: skip
    answer = _ask(t, "list", request, timeout=120)
    entries = [Entry(**{k: e.get(k, d) for k, d in _ENTRY_FIELDS.items()}) for e in answer["entries"]]
    return Page(entries, int(answer["total"]), int(answer["offset"]), bool(answer.get("mounted_here")))


def _ask_kept(t: Transport, command: str, request: dict, timeout: float) -> dict | None:
    """The kept reader's answer; None where no reader can be kept, or it ended before answering (its idle time ran
    out as it was asked, or it failed: the usual way says why). The host's reader gives up on the question when Tarn
    does (its deadline goes with it), so its slot and any mount it made are let go."""
    question = {"command": command, "request": request, "deadline": timeout}
    with kept(t, python("-c", source_of(snap_helper), "serve"), longest=timeout) as talk:
        if talk is None:
            return None
        try:
            line = talk.ask(json.dumps(question).encode(), timeout=timeout)
        except ConversationEnded:
            return None
        try:
            said = json.loads(line)
        except ValueError:
            said = None
        if not isinstance(said, dict) or len(said) != 1 or not {"answer", "refused", "error"} & set(said):
            talk.close()
            raise CommandFailed(["tarn-snap", command], 1, "the reader's answer is not one") from None
    if "refused" in said:
        raise PathNotAllowed(str(said["refused"])[-500:])
    if "error" in said:
        raise error_for(["tarn-snap", command], 1, str(said["error"])[-2000:])
    if not isinstance(said["answer"], dict):
        raise CommandFailed(["tarn-snap", command], 1, "the reader's answer is not one")
    return said["answer"]


_ENTRY_FIELDS = {"name": "", "raw": "", "type": "other", "size": 0, "mode": 0, "owner": "", "group": "", "mtime": 0.0,
                 "target": "", "live": None}  # fmt: skip


def entry(t: Transport, mount: str, snapshot: str, parts: list[str]) -> Entry:
    """One entry of a snapshot, and whether the live one is the same, changed or gone."""
    found = _ask(t, "entry", {"mount": mount, "snapshot": snapshot, "parts": parts}, timeout=60)
    return Entry(**{k: found.get(k, d) for k, d in _ENTRY_FIELDS.items()})


READ_CHUNK = 4 << 20  # bytes a read brings (base64 on the wire: a third more)


def read(t: Transport, mount: str, snapshot: str, parts: list[str], *, offset: int, length: int) -> tuple[int, bytes]:
    """(the file's size, length bytes of it from offset): a regular file of a snapshot, never through a link."""

    found = _ask(t, "read", {"mount": mount, "snapshot": snapshot, "parts": parts, "offset": int(offset),
                              "length": int(length)}, timeout=120)  # fmt: skip
    return int(found["size"]), base64.b64decode(found["data"])


def versions(t: Transport, mount: str, parts: list[str], snapshots: list[str]) -> Versions:
    """The path's stamp (object number, size, type, mtime, ctime) live and in each snapshot (newest first), one
    snapshot mounted at a time by this reader."""
    answer = _ask(t, "versions", {"mount": mount, "parts": parts, "snapshots": list(snapshots)}, timeout=600)
    return Versions(answer["live"], answer["snapshots"], int(answer.get("most_mounted", 0)))


def mounted(t: Transport, mount: str) -> list[str]:
    """The dataset's snapshots mounted now."""
    argv = python("-c", source_of(snap_helper), "mounts", mount)
    done = t.run(argv, timeout=30, check=False)
    if done.returncode != 0:
        raise error_for(["tarn-snap", "mounts"], done.returncode, done.stderr)
    return json.loads(done.stdout)


@dataclass(frozen=True)
class Changes:
    """One page of what changed under a folder, counted by change (added, removed, modified, renamed)."""

    changes: list[zdiff.Change]
    counts: dict[str, int]
    matched: int  # the changes under the folder
    total: int  # every change zfs diff listed


def changes(t: Transport, mount: str, since: str, to: str = "", *, prefix: list[str] = (), offset: int = 0,
            limit: int = PAGE) -> Changes:  # fmt: skip
    """`zfs diff` of since (a snapshot) and to (a later one, or "" for now), read on the NAS as it comes: only the
    page under prefix (hex names below the mount point) travels."""
    request = {"argv": zdiff.diff_argv(since, to), "mount": mount, "prefix": "".join(f"{p}2f" for p in prefix),
               "offset": int(offset), "limit": int(limit)}  # fmt: skip
    found = _ask(t, "diff", request, timeout=600)
    counts = {zdiff.CHANGES.get(k, k): v for k, v in found["counts"].items()}
    return Changes(zdiff.parse("\n".join(found["lines"])), counts, int(found["matched"]), int(found["total"]))
