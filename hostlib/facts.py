"""What a host offers: OpenZFS version and JSON support, kernel, CPUs, RAM, when it booted and which tools exist."""

import json
import re
from dataclasses import asdict, dataclass, field

from hostlib import zfs
from hostlib.errors import CommandFailed, HostError
from hostlib.runner import Transport

TOOLS = ("zpool", "zfs", "smbd", "testparm", "exportfs", "ip", "fio", "iperf3")


@dataclass
class HostFacts:
    hostname: str = ""
    kernel: str = ""
    cpus: int = 0
    memory_bytes: int = 0
    btime: int = 0  # when the host booted, seconds since the epoch (/proc/stat); 0 when unknown
    zfs_version: str = ""  # userland, e.g. "2.3.2-2~bpo12+2"; "" when ZFS is missing
    zfs_kmod_version: str = ""
    zfs_json: bool = False  # `zpool … -j --json-int` works (OpenZFS ≥ 2.3)
    tools: dict[str, bool] = field(default_factory=dict)
    aes_impl: str = ""  # the ICP's AES implementation in use (aesni, x86_64, generic); "" without the module
    gcm_impl: str = ""  # its GCM one (avx, pclmulqdq, generic)

    def as_dict(self) -> dict:
        return asdict(self)


def parse_meminfo(text: str) -> int:
    match = re.search(r"^MemTotal:\s+(\d+)\s+kB", text, re.M)
    return int(match.group(1)) * 1024 if match else 0


def parse_btime(text: str) -> int:
    """/proc/stat's `btime 1795511521` line: the boot time in seconds since the epoch (0 when missing)."""
    match = re.search(r"^btime\s+(\d+)\s*$", text, re.M)
    return int(match.group(1)) if match else 0


PROC_FILES = ("/proc/meminfo", "/proc/stat")  # read in one cat: their line keys (MemTotal:, btime) do not collide


def parse_which(text: str) -> set[str]:
    return {line.rsplit("/", 1)[-1] for line in text.split() if line.startswith("/")}


def parse_zfs_version(text: str) -> tuple[str, str]:
    """`zfs version` prints 'zfs-2.3.2-2~bpo12+2' and 'zfs-kmod-2.3.2-2~bpo12+2'."""
    user = kmod = ""
    for line in text.split():
        if line.startswith("zfs-kmod-"):
            kmod = line.removeprefix("zfs-kmod-")
        elif line.startswith("zfs-"):
            user = line.removeprefix("zfs-")
    return user, kmod


# The ICP (ZFS's crypto) is part of the zfs module since 2.x; its files end without a newline (grep -H: a line each).
ICP_IMPLS = ("/sys/module/zfs/parameters/icp_aes_impl", "/sys/module/zfs/parameters/icp_gcm_impl")
# Best first: what "fastest" (the default) resolves to when the CPU has it.
FASTEST = {"aes": ("aesni", "x86_64", "generic"), "gcm": ("avx", "pclmulqdq", "generic")}


def parse_impl(line: str, kind: str) -> str:
    """One ICP parameter's line, `cycle [fastest] generic x86_64 aesni` (the choice in brackets), → the
    implementation in use: the choice, or for cycle/fastest the best one listed."""
    words = line.split()
    chosen = next((w.strip("[]") for w in words if w.startswith("[")), "")
    listed = {w.strip("[]") for w in words}
    if chosen in ("fastest", "cycle"):
        return next((impl for impl in FASTEST[kind] if impl in listed), "")
    return chosen


def gather(transport: Transport) -> HostFacts:
    facts = HostFacts()
    uname = transport.run(["uname", "-n", "-r"], timeout=15).stdout.split()
    facts.hostname, facts.kernel = (uname + ["", ""])[:2]
    facts.cpus = int(transport.run(["nproc"], timeout=15).stdout.strip() or 0)
    proc = transport.run(["cat", "--", *PROC_FILES], timeout=15).stdout
    facts.memory_bytes, facts.btime = parse_meminfo(proc), parse_btime(proc)
    found = parse_which(transport.run(["which", *TOOLS], timeout=15, check=False).stdout)
    facts.tools = {tool: tool in found for tool in TOOLS}
    if facts.tools["zfs"]:
        try:
            facts.zfs_version, facts.zfs_kmod_version = parse_zfs_version(
                transport.run(["zfs", "version"], timeout=30).stdout
            )
        except CommandFailed:
            pass
        found = transport.run(["grep", "-H", ".", "--", *ICP_IMPLS], timeout=15, check=False).stdout
        lines = dict(line.split(":", 1) for line in found.splitlines() if ":" in line)
        facts.aes_impl = parse_impl(lines.get(ICP_IMPLS[0], ""), "aes")  # "" without the module
        facts.gcm_impl = parse_impl(lines.get(ICP_IMPLS[1], ""), "gcm")
    if facts.tools["zpool"]:
        try:
            # `zpool status`, not `zpool list`: with no pools, 2.3's `zpool list -j` prints nothing at all.
            status = json.loads(transport.run(["zpool", "status", "-j", "--json-int"], timeout=30).stdout)
            facts.zfs_json = "pools" in status
        except (HostError, ValueError):
            facts.zfs_json = False
    return facts


def reachable(t: Transport, *, timeout: float = 15) -> None:
    """Raises the transport's error unless a command runs on the host within the timeout."""
    t.run(["true"], timeout=timeout)


KERNEL_RELEASE, ZFS_MODULE_VERSION = "/proc/sys/kernel/osrelease", "/sys/module/zfs/version"


@dataclass(frozen=True)
class Now:
    """What a run's manifest records of the host as it runs, read in one command."""

    kernel: str  # as `uname -r` prints it
    zfs_kmod: str  # the loaded module's version ('' when it is not loaded)
    arc: dict[str, int]  # arcstats ({} without the module)

    @property
    def openzfs(self) -> str:
        """As `zfs version` names the module: zfs-kmod-2.3.2-2~bpo12+2."""
        return f"zfs-kmod-{self.zfs_kmod}" if self.zfs_kmod else ""


def parse_now(text: str) -> Now:
    """The kernel's release, the zfs module's version and arcstats, one after another (`cat` skips the files of a
    module that is not loaded: then arcstats' header, which has spaces, or nothing follows the release)."""
    kernel, _, rest = text.partition("\n")
    version, _, arc = rest.partition("\n")
    if not version.strip() or " " in version.strip():
        version, arc = "", rest
    return Now(kernel.strip(), version.strip(), zfs.parse_arcstats(arc))


def now(t: Transport) -> Now:
    return parse_now(t.run(["cat", "--", KERNEL_RELEASE, ZFS_MODULE_VERSION, zfs.ARCSTATS], check=False).stdout)


def cpu_count(t: Transport) -> int:
    return int(t.run(["nproc"]).stdout.strip() or 1)


def tools_found(t: Transport, tools: tuple[str, ...]) -> set[str]:
    """Which of these tools the host has on its PATH."""
    return parse_which(t.run(["which", *tools], check=False).stdout)


VERSIONED = ("fio", "iperf3")


def tool_version(t: Transport, tool: str) -> str:
    """The first line of `tool --version` (fio, iperf3), or '' where it fails."""
    if tool not in VERSIONED:
        raise ValueError(f"no version read for {tool}")
    return t.run([tool, "--version"], check=False).stdout.strip().split("\n")[0]
