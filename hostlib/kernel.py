"""Kernel tunables: sysctls (read with `sysctl`, set with `sysctl -w`) and OpenZFS module parameters (read with
`grep` from /sys/module/zfs/parameters, set by the shipped helper), and the files that make them survive a
reboot (/etc/sysctl.d, /etc/modprobe.d), rendered here from plain values."""

import re

from hostlib.digits import is_digits
from hostlib.runner import Transport

ZFS_PARAMETERS = "/sys/module/zfs/parameters"
SYSCTL_FILE = "/etc/sysctl.d/90-tarn.conf"
MODPROBE_FILE = "/etc/modprobe.d/tarn-zfs.conf"
HEADER = "# Written by Tarn from its database; edits here are replaced on the next apply.\n"

# Families Tarn may tune: core networking, TCP and memory. Anything else (kernel.*, fs.*, net.ipv4.ip_forward,
# conf.* per interface) is out of reach of the tuning pages.
SYSCTL_KEY = re.compile(r"^(?:net\.core\.|net\.ipv4\.tcp_|vm\.)[a-z0-9_]{1,64}$")
ZFS_PARAMETER = re.compile(r"^(zfs|zfetch|l2arc|zil|spa|metaslab|dbuf|vdev)_?[a-z0-9_]{1,64}$")
# A value: up to four numbers separated by single spaces (tcp_rmem), or a short word (cubic, fq). ASCII only.
VALUE = re.compile(r"^(?:[0-9]{1,19}(?: [0-9]{1,19}){0,3}|[a-z][a-z0-9_]{0,31})$")

# Never read, stored or set: a secret (the TCP Fast Open key signs the cookies this host hands out).
SECRETS = {"net.ipv4.tcp_fastopen_key"}
# Inside the families but not Tarn's to change: switches that harden the host (turning them off from a tuning page
# weakens it for every service and survives reboots), refused whatever the value with the reason said …
HARDENING = {
    "vm.mmap_min_addr": "it keeps a kernel NULL-pointer dereference from being exploitable",
    "vm.mmap_rnd_bits": "it sets how much address-space randomisation (ASLR) programs get",
    "vm.mmap_rnd_compat_bits": "it sets how much address-space randomisation (ASLR) 32-bit programs get",
    "vm.unprivileged_userfaultfd": "it lets unprivileged programs stall the kernel, a common exploit aid",
    "net.core.bpf_jit_enable": "it switches the BPF JIT (2 writes compiled programs to the kernel log)",
    "net.core.bpf_jit_harden": "it blinds constants in compiled BPF against JIT spraying",
    "net.core.bpf_jit_kallsyms": "it exposes the addresses of compiled BPF programs",
    "net.core.bpf_jit_limit": "it caps the memory unprivileged BPF programs may take",
    "net.ipv4.tcp_syncookies": "it keeps the host answering during a SYN flood",
    "net.ipv4.tcp_rfc1337": "it protects connections against TIME-WAIT assassination",
}
# … and triggers that are actions, not settings: kept in sysctl.d they would run at every boot (a benchmark drops the
# caches with write(), never as a kept setting).
ACTIONS = {
    key: "it is an action, not a setting (kept for boot it would run at every start)"
    for key in ("vm.drop_caches", "vm.compact_memory", "vm.stat_refresh")
}
REFUSED = {**HARDENING, **ACTIONS}
# ZFS parameters that trade durability or the detection of damage for speed: set only with a typed confirmation,
# unless to the value that keeps data safe (OpenZFS's default). key → (safe value, what is at risk).
DURABILITY = {
    "zil_replay_disable": (
        "0",
        "the intent log is not replayed when a pool is imported: synchronous writes acknowledged before a crash or "
        "power cut are lost",
    ),
    "zfs_nocacheflush": (
        "0",
        "disks are not asked to flush their write caches: a power cut can lose or corrupt recently written data, "
        "and pool metadata with it",
    ),
    "zil_nocacheflush": (
        "0",
        "disks are not asked to flush their write caches after intent-log writes: synchronous writes acknowledged "
        "before a power cut can be lost",
    ),
    "zfs_recover": ("0", "errors that should stop ZFS are ignored: a damaged pool can be written to and damaged more"),
    "zfs_no_scrub_io": ("0", "scrubs and resilvers stop reading data: damage is no longer found or repaired"),
    "zfs_scan_ignore_errors": ("0", "scrubs and resilvers complete over errors they could not repair"),
    "zfs_free_leak_on_eio": ("0", "space on blocks that cannot be read is leaked instead of the pool being halted"),
    "spa_load_verify_data": ("1", "a pool is imported without verifying its data: damage goes unnoticed"),
    "spa_load_verify_metadata": ("1", "a pool is imported without verifying its metadata: damage goes unnoticed"),
}

# The kernel type of the sysctls Tarn may tune whose numbers are not C ints, as their largest value (Tarn writes
# no negative numbers); every other number of the families is an int (proc_dointvec), so at most INT_MAX.
INT_MAX, UINT_MAX, LONG_MAX, ULONG_MAX = 2**31 - 1, 2**32 - 1, 2**63 - 1, 2**64 - 1
WIDER = {
    "net.ipv4.tcp_mem": LONG_MAX,
    "net.ipv4.tcp_notsent_lowat": UINT_MAX,
    "net.ipv4.tcp_comp_sack_delay_ns": ULONG_MAX,
    "net.ipv4.tcp_comp_sack_slack_ns": ULONG_MAX,
    "net.core.busy_poll": UINT_MAX,
    "net.core.busy_read": UINT_MAX,
    "net.core.skb_defer_max": UINT_MAX,
    "vm.dirty_bytes": ULONG_MAX,
    "vm.dirty_background_bytes": ULONG_MAX,
    "vm.nr_hugepages": ULONG_MAX,
    "vm.nr_hugepages_mempolicy": ULONG_MAX,
    "vm.nr_overcommit_hugepages": ULONG_MAX,
    "vm.overcommit_kbytes": ULONG_MAX,
    "vm.admin_reserve_kbytes": ULONG_MAX,
    "vm.user_reserve_kbytes": ULONG_MAX,
}
# Narrower ranges the kernel enforces (proc_dointvec_minmax), named here before anything runs.
RANGES = {
    "vm.swappiness": (0, 200),
    "vm.dirty_ratio": (0, 100),
    "vm.dirty_background_ratio": (0, 100),
    "vm.overcommit_memory": (0, 2),
    "vm.compaction_proactiveness": (0, 100),
    "vm.watermark_scale_factor": (1, 3000),
    "net.ipv4.tcp_mtu_probing": (0, 2),
    "net.ipv4.tcp_slow_start_after_idle": (0, 1),
}


def check_key(kind: str, key: str) -> str:
    """The key if it has the allowed shape for its kind and is no secret; ValueError otherwise (before any argv
    exists)."""
    pattern = SYSCTL_KEY if kind == "sysctl" else ZFS_PARAMETER if kind == "zfs" else None
    if pattern is None:
        raise ValueError(f"unknown kind of tunable: {kind}")
    if not isinstance(key, str) or not pattern.fullmatch(key):
        allowed = "net.core.*, net.ipv4.tcp_* or vm.*" if kind == "sysctl" else "a ZFS module parameter"
        raise ValueError(f"{str(key)[:80]!r} is not {allowed}")
    if key in SECRETS:
        raise ValueError(f"{key} is a secret: Tarn never reads, stores or sets it")
    return key


def check_allowed(kind: str, key: str) -> str:
    """The key if Tarn may keep a value for it: not a hardening switch or an action (REFUSED)."""
    key = check_key(kind, key)
    _refuse(kind, key, REFUSED)
    return key


def _refuse(kind: str, key: str, table: dict) -> None:
    """A sysctl named in table (REFUSED, or its HARDENING part) is refused, saying why."""
    if kind == "sysctl" and key in table:
        raise ValueError(f"Tarn does not change {key}: {table[key]}")


def check_range(kind: str, key: str, value: str) -> str:
    """The value if each of its numbers fits the key's kernel type (and the range the kernel enforces for it)."""
    if kind != "sysctl":
        return value
    low, high = RANGES.get(key, (0, WIDER.get(key, INT_MAX)))
    numbers = value.split()
    if all(is_digits(n) for n in numbers) and not all(low <= int(n) <= high for n in numbers):
        raise ValueError(f"{key} takes whole numbers from {low} to {high}")
    return value


def durability_risk(kind: str, key: str, value: str) -> str:
    """What setting key to value puts at risk ('' for nothing): durability parameters away from their safe value."""
    safe, risk = DURABILITY.get(key, (None, "")) if kind == "zfs" else (None, "")
    return "" if safe is None or normalise(value) == safe else f"{key} = {normalise(value)} risks losing data: {risk}."


def check_setting(kind: str, key: str, value: str, *, confirmed: bool = False) -> tuple[str, str]:
    """(key, value) for a value Tarn sets and keeps: the shapes, not refused, in range, and a durability risk only
    when the admin confirmed it. ValueError naming the first problem."""
    key, value = check_allowed(kind, key), check_value(value)
    check_range(kind, key, value)
    if not confirmed and (risk := durability_risk(kind, key, value)):
        raise ValueError(f"{risk} Confirm by typing {key}.")
    return key, value


def normalise(value: str) -> str:
    """Values as the kernel prints them: runs of spaces and tabs become one space."""
    return " ".join(str(value).split())


def check_value(value: str) -> str:
    """The value normalised, if it has an allowed shape. Only spaces and tabs separate numbers: str.split() would
    also split on other characters (\\x1c, U+2003…) and quietly turn them into spaces."""
    value = str(value)
    if any(not (c == "\t" or " " <= c <= "~") for c in value) or not VALUE.fullmatch(normalise(value)):
        raise ValueError("Up to four whole numbers separated by spaces, or one lowercase word (e.g. cubic)")
    return normalise(value)


def parse_sysctl(stdout: str) -> dict[str, str]:
    """`sysctl k1 k2 …` output: 'key = value' lines (values with tabs between numbers)."""
    values = {}
    for line in stdout.splitlines():
        key, sep, value = line.partition(" = ")
        if sep:
            values[key.strip()] = normalise(value)
    return values


def parse_parameters(stdout: str) -> dict[str, str]:
    """`grep -H . /sys/module/zfs/parameters/…` output: 'path:value' lines."""
    values = {}
    for line in stdout.splitlines():
        path, sep, value = line.partition(":")
        if sep and path.startswith(ZFS_PARAMETERS + "/"):
            values[path.rsplit("/", 1)[1]] = normalise(value)
    return values


def read(t: Transport, kind: str, keys: list[str]) -> dict[str, str]:
    """Current values of keys that exist (a missing key is simply absent from the result). One command."""
    keys = [check_key(kind, k) for k in keys]
    if not keys:
        return {}
    if kind == "sysctl":
        return parse_sysctl(t.run(["sysctl", "--", *keys], check=False, timeout=30).stdout)
    paths = [f"{ZFS_PARAMETERS}/{k}" for k in keys]
    return parse_parameters(t.run(["grep", "-H", ".", "--", *paths], check=False, timeout=30).stdout)


def read_all_sysctls(t: Transport) -> dict[str, str]:
    """Every sysctl of the families Tarn may tune, with its value (one command)."""
    argv = ["sysctl", "-a", "--pattern", r"^(net\.core\.|net\.ipv4\.tcp_|vm\.)"]
    values = parse_sysctl(t.run(argv, check=False, timeout=30).stdout)
    return {k: v for k, v in values.items() if SYSCTL_KEY.fullmatch(k) and k not in SECRETS}


def read_all_parameters(t: Transport) -> dict[str, str]:
    """Every ZFS module parameter and its value ({} where the module is not loaded)."""
    result = t.run(["grep", "-r", "-H", ".", "--", ZFS_PARAMETERS], check=False, timeout=30)
    return parse_parameters(result.stdout)


def write(t: Transport, kind: str, key: str, value: str, *, restoring: bool = False) -> None:
    """Set one tunable at runtime. The value must fit the key's type and a hardening switch is refused, unless
    restoring puts back the host's own value from before Tarn (the kernel held it, so the kernel takes it). The
    kernel checks the rest; its refusal is a CommandFailed naming it."""
    key, value = check_key(kind, key), check_value(value)
    if not restoring:
        _refuse(kind, key, HARDENING)
        check_range(kind, key, value)
    if kind == "sysctl":
        t.run(["sysctl", "-q", "-w", f"{key}={value}"], mutating=True, timeout=30)
    else:
        t.module_parameter("zfs", key, value)


def render_sysctl(values: dict[str, str]) -> str:
    """/etc/sysctl.d/90-tarn.conf for the settings Tarn keeps (sorted, one per line). A refused key kept from
    before it was refused is left out: no hardening switch, action or secret is carried into the next boot."""
    kept = {k: v for k, v in values.items() if k not in REFUSED and k not in SECRETS}
    lines = [f"{check_key('sysctl', k)} = {check_value(v)}" for k, v in sorted(kept.items())]
    return HEADER + "".join(line + "\n" for line in lines)


def render_modprobe(values: dict[str, str]) -> str:
    """/etc/modprobe.d/tarn-zfs.conf: one `options zfs` line, read when the module loads (at boot)."""
    if not values:
        return HEADER
    options = " ".join(f"{check_key('zfs', k)}={check_value(v).replace(' ', ',')}" for k, v in sorted(values.items()))
    return HEADER + f"options zfs {options}\n"


def modules_available(t: Transport, names: list[str]) -> set[str]:
    """Which of these kernel modules the host can load (or has built in)."""
    found = set()
    for name in names:
        if name.isidentifier() and t.run(["modinfo", "-F", "name", "--", name], check=False).returncode == 0:
            found.add(name)
    return found
