"""What changed in a dataset between two snapshots, or since one: `zfs diff -FHt`, parsed.

Its lines (libzfs_diff.c): the change's ctime (`%10lld.%09lld`), the change (+ added, - removed, M modified, R
renamed), the entry's type (F file, / folder, @ link, | FIFO, = socket, B and C devices), the path; a rename adds the
new path, a change of a file's link count adds `(+1)` or `(-1)`. Paths are the mount point's, every byte that is a
space, a control character, a backslash or not 7-bit ASCII written as backslash and four octal digits (`\\0040`), so
a name with a tab or a newline cannot break a line and comes back byte for byte."""

import re
from dataclasses import dataclass

from hostlib import names

CHANGES = {"+": "added", "-": "removed", "M": "modified", "R": "renamed"}
TYPES = {"F": "file", "/": "dir", "@": "link", "|": "fifo", "=": "socket", "B": "block", "C": "char", ">": "door",
         "P": "port"}  # fmt: skip
ESCAPED = re.compile(r"\\([0-7]{4})")


@dataclass(frozen=True)
class Change:
    at: float  # the entry's ctime
    change: str  # added, removed, modified, renamed
    type: str  # file, dir, link…
    path: bytes
    new_path: bytes | None = None
    links: int | None = None  # a file's link count went up or down by this (a hard link made or removed)


def unescape(text: str) -> bytes:
    """A path as zfs diff writes it, back to its bytes."""
    out, last = bytearray(), 0
    for m in ESCAPED.finditer(text):
        out += text[last : m.start()].encode("ascii", "surrogateescape")
        out.append(int(m.group(1), 8) & 0xFF)
        last = m.end()
    out += text[last:].encode("ascii", "surrogateescape")
    return bytes(out)


def diff_argv(since: str, to: str = "") -> list[str]:
    """since: a snapshot (dataset@name); to: a later snapshot of it, or "" for now (the dataset as it is: zfs takes a
    short-lived snapshot of its own for that)."""
    since = names.snapshot_name(since)
    dataset = since.split("@")[0]
    to = names.snapshot_name(to) if to else dataset
    if to.split("@")[0] != dataset:
        raise names.InvalidName("zfs diff compares two snapshots of one dataset")
    return ["zfs", "diff", "-F", "-H", "-t", "--", since, to]


def parse(text: str) -> list[Change]:
    """The lines of `zfs diff -FHt`; a line that is not one (a warning zfs printed among them) is left out."""
    found = []
    for line in text.splitlines():
        fields = line.split("\t")
        if len(fields) < 4 or fields[1] not in CHANGES or fields[2] not in TYPES:
            continue
        try:
            at = float(fields[0].strip())
        except ValueError:
            continue
        change, kind, path = CHANGES[fields[1]], TYPES[fields[2]], unescape(fields[3])
        new_path, links = None, None
        if len(fields) > 4:
            extra = fields[4]
            if change == "renamed":
                new_path = unescape(extra)
            elif re.fullmatch(r"\([+-]\d+\)", extra):
                links = int(extra[1:-1])
        found.append(Change(at, change, kind, path, new_path, links))
    return found
