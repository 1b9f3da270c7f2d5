"""Kernel tunables: sysctls (read with `sysctl`, set with `sysctl -w`) and OpenZFS module parameters (read with
`grep` from /sys/module/zfs/parameters, set by the shipped helper), and the files that make them survive a
reboot (/etc/sysctl.d, /etc/modprobe.d), rendered here from plain values."""

import re

from hostlib.runner import Transport

ZFS_PARAMETERS = "/sys/module/zfs/parameters"
SYSCTL_FILE = "/etc/sysctl.d/90-tarn.conf"
MODPROBE_FILE = "/etc/modprobe.d/tarn-zfs.conf"
HEADER = "# Written by Tarn from its database; edits here are replaced on the next apply.\n"

# Families Tarn may tune: core networking, TCP and memory. Anything else (kernel.*, fs.*, net.ipv4.ip_forward,
# conf.* per interface) is out of reach of the tuning pages.
SYSCTL_KEY = re.compile(r"^(?:net\.core\.|net\.ipv4\.tcp_|vm\.)[a-z0-9_]{1,64}$")
ZFS_PARAMETER = re.compile(r"^(zfs|zfetch|l2arc|zil|spa|metaslab|dbuf|vdev)_?[a-z0-9_]{1,64}$")
# A value: up to four numbers separated by single spaces (tcp_rmem), or a short word (cubic, fq).
VALUE = re.compile(r"^(?:\d{1,19}(?: \d{1,19}){0,3}|[a-z][a-z0-9_]{0,31})$")


def check_key(kind: str, key: str) -> str:
    """The key if it has the allowed shape for its kind; ValueError otherwise (before any argv exists)."""
    pattern = SYSCTL_KEY if kind == "sysctl" else ZFS_PARAMETER if kind == "zfs" else None
    if pattern is None:
        raise ValueError(f"unknown kind of tunable: {kind}")
    if not pattern.fullmatch(key):
        allowed = "net.core.*, net.ipv4.tcp_* or vm.*" if kind == "sysctl" else "a ZFS module parameter"
        raise ValueError(f"{key[:80]!r} is not {allowed}")
    return key


def normalise(value: str) -> str:
    """Values as the kernel prints them: runs of spaces and tabs become one space."""
    return " ".join(str(value).split())


def check_value(value: str) -> str:
    value = str(value)
    if any(c in value for c in "\n\r\v\f\x00") or not VALUE.fullmatch(normalise(value)):
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
    return {k: v for k, v in values.items() if SYSCTL_KEY.fullmatch(k)}


def read_all_parameters(t: Transport) -> dict[str, str]:
    """Every ZFS module parameter and its value ({} where the module is not loaded)."""
    result = t.run(["grep", "-r", "-H", ".", "--", ZFS_PARAMETERS], check=False, timeout=30)
    return parse_parameters(result.stdout)


def write(t: Transport, kind: str, key: str, value: str) -> None:
    """Set one tunable at runtime. The kernel checks the value; its refusal is a CommandFailed naming it."""
    key, value = check_key(kind, key), check_value(value)
    if kind == "sysctl":
        t.run(["sysctl", "-q", "-w", f"{key}={value}"], mutating=True, timeout=30)
    else:
        t.module_parameter("zfs", key, value)


def render_sysctl(values: dict[str, str]) -> str:
    """/etc/sysctl.d/90-tarn.conf for the settings Tarn keeps (sorted, one per line)."""
    lines = [f"{check_key('sysctl', k)} = {check_value(v)}" for k, v in sorted(values.items())]
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
