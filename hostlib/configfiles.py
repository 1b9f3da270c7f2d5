"""Config files Tarn owns for Samba and nfsd: the value checks both use (every value against a strict pattern
first: share parameters are a classic injection surface) and the write that puts the old file back when the
service refuses the new one."""

import re

from hostlib.errors import HostError, last_line
from hostlib.runner import Transport, source_of

HELPER_DIR = "/usr/local/lib/tarn"  # Tarn's programs on a NAS (replication's, the ACL walk), root's, from Tarn's source

HEADER = "# Written by Tarn from its database; edits here are replaced on the next apply.\n"


class InvalidShare(ValueError):
    """Field → problem for every value that may not go into a config file."""

    def __init__(self, problems: dict[str, str]):
        self.problems = problems
        super().__init__("; ".join(f"{k}: {v}" for k, v in problems.items()))


class ConfigRejected(HostError):
    def __init__(self, tool: str, problems: list[str]):
        self.problems = problems
        super().__init__(f"{tool} refused the new configuration: {'; '.join(problems)[:500]}")


PATH = re.compile(r"^/[A-Za-z0-9_.:/+-]*$")
# No newlines, config syntax, control characters, or the invisible ones that make text read other than it is
# (bidi overrides and isolates, zero-width characters, the BOM).
TEXT = re.compile(r"^[^\n\r\\\[\]%$;#\x00-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]*$")


def check_path(path: str, problems: dict, key: str = "path") -> None:
    if not PATH.fullmatch(path) or "/../" in path + "/" or "/./" in path + "/" or "//" in path:
        problems[key] = "An absolute path of letters, digits and _ . : + - / (no .., no spaces)"
    elif "/.zfs" in path:
        problems[key] = "Snapshots (.zfs) are shared through Previous Versions, not as a path"


def check_text(value: str, key: str, problems: dict, limit: int = 255) -> None:
    if len(value) > limit or not TEXT.fullmatch(value):
        problems[key] = f"Up to {limit} characters, without newlines, backslashes, brackets, %, $, ; or #"


def check_words(value: list[str], pattern: re.Pattern, key: str, problems: dict, what: str) -> None:
    bad = [v for v in value if not pattern.fullmatch(v)]
    if bad:
        problems[key] = f"Not {what}: {', '.join(bad[:3])}"


def current(t: Transport, path: str) -> str:
    return t.run(["cat", "--", path], check=False).stdout


def install_sources(t: Transport, programs: dict) -> bool:
    """Tarn's own programs on a host ({path: module}: each module's source, root's, 0755), read back with one cat and
    rewritten only where they differ (each write_file starts a python3 on the host: ~1.5 s under emulation); True if
    any was written."""
    wanted = {path: source_of(module) for path, module in programs.items()}
    if t.run(["cat", "--", *wanted], check=False).stdout == "".join(wanted.values()):
        return False
    for path, text in wanted.items():
        t.write_file(path, text, mode=0o755)
    return True


def put_back(t: Transport, path: str, text: str, mode: int = 0o644) -> None:
    """A file as current() read it before a change: written again, or removed if there was none."""
    if text:
        t.write_file(path, text, mode=mode)
    else:
        t.remove_file(path)


def replace_and_reload(
    t: Transport,
    path: str,
    text: str,
    reload: list[str],
    *,
    timeout: float,
    old: str | None = None,
    stderr_fails: bool = False,
) -> bool:
    """Write path if its content differs, then reload; if the reload fails (or, with stderr_fails, says anything),
    put the old file back, reload that, and raise. True if the file changed."""
    old = current(t, path) if old is None else old
    if old == text or not t.write_file(path, text):
        return False
    result = t.run(reload, mutating=True, check=False, timeout=timeout)
    problems = [line.strip() for line in result.stderr.splitlines() if line.strip()] if stderr_fails else []
    if result.returncode != 0 or problems:
        t.write_file(path, old)
        t.run(reload, mutating=True, check=False, timeout=timeout)
        raise ConfigRejected(reload[0], problems or [last_line(result.stderr) or f"exit status {result.returncode}"])
    return True


NSSWITCH = "/etc/nsswitch.conf"


def nss_with(nsswitch: str, source: str) -> str:
    """nsswitch.conf with source (winbind, sss) last on the passwd and group lines, as its package's own install adds
    it; other lines, and lines that already name it, unchanged."""
    out = []
    for line in nsswitch.splitlines():
        key, sep, sources = line.partition(":")
        if sep and key.strip() in ("passwd", "group") and source not in sources.split():
            line = f"{key}:{sources.rstrip()} {source}"
        out.append(line)
    return "\n".join(out) + "\n"


def nss_without(nsswitch: str, source: str) -> str:
    """nsswitch.conf with source taken off the passwd and group lines."""
    out = []
    for line in nsswitch.splitlines():
        key, sep, sources = line.partition(":")
        if sep and key.strip() in ("passwd", "group") and source in sources.split():
            line = f"{key}:" + re.sub(rf"\s+{re.escape(source)}\b", "", sources)
        out.append(line)
    return "\n".join(out) + "\n"
