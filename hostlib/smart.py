"""Disk health through smartmontools (smartctl ≥ 7.0, its JSON): `--scan -j` finds the disks (`--scan-open` once
for a new one, to learn its type), `-n standby -j -x -d <type>` reads one without waking it when it sleeps (with
its type given, CHECK POWER MODE is the first command it is sent), `-t short|long` and `-X` start and stop a
self-test.

The exit status is a bitmask and is decoded (EXIT_BITS), never ignored. The JSON has traps this parser knows: the
ATA self-test log under "standard" or "extended" (newest first), "passed" missing for an aborted test, NVMe tables
with null slots, no SMART at all behind virtio or an unknown USB bridge, and nothing but a message for a disk that
sleeps. judge() turns one read into a state with its reasons; the rules Tarn alerts on read the same fields."""

import json
import re
from dataclasses import dataclass, field

from hostlib.errors import error_for
from hostlib.runner import Transport

SMARTCTL = "smartctl"
DEVICE = re.compile(r"/dev/[A-Za-z0-9][A-Za-z0-9/_.:-]{0,120}")
DEVICE_TYPE = re.compile(r"[a-z][a-z0-9_,+-]{0,40}")  # smartctl's -d: sat, nvme, scsi, sat,12, megaraid,3 …
SELF_TESTS = ("short", "long")
READ_SECONDS = 30  # one disk's read; a disk that takes longer is shown as not answering, the others go on

# Bit i of smartctl's exit status (smartctl(8), "RETURN VALUES").
EXIT_BITS = (
    ("usage", "smartctl could not parse its command line"),
    ("open", "the device could not be opened, did not identify itself, or sleeps"),
    ("command", "a SMART command failed or a SMART structure had a bad checksum"),
    ("failing", "the drive's own assessment is FAILING"),
    ("prefail", "a pre-failure attribute is at or below its threshold"),
    ("past", "an attribute was at or below its threshold in the past"),
    ("error_log", "the drive's error log holds errors"),
    ("self_test_log", "the self-test log holds a failed test"),
)

# SMART attributes whose raw value above zero goes before a failure (Backblaze's drive data).
WATCHED = {
    5: "reallocated sectors",
    187: "reported uncorrectable errors",
    188: "command timeouts",
    197: "pending sectors",
    198: "offline uncorrectable sectors",
}
# NVMe critical warning bits (NVMe base spec, SMART / Health Information log, byte 0).
NVME_WARNINGS = (
    (0x01, "spare capacity below its threshold"),
    (0x02, "temperature beyond a threshold"),
    (0x04, "reliability degraded by media or internal errors"),
    (0x08, "media placed in read-only mode"),
    (0x10, "volatile memory backup failed"),
    (0x20, "persistent memory region unreliable"),
)
NVME_FAILING = 0x01 | 0x04 | 0x08 | 0x10 | 0x20  # all but temperature, which is a watch
ASLEEP = re.compile(r"Device is in (\S+(?: \(OS\))?) mode")
NO_SMART = re.compile(
    r"Unable to detect device type|Unknown USB bridge|SMART support is:\s+Unavailable|"
    r"Device does not support SMART|requires option '-d'|Operation not supported",
    re.I,
)


class SmartError(ValueError):
    """A device name or request smartctl must not be given."""


def _device(device: str) -> str:
    if not DEVICE.fullmatch(device) or "/../" in device + "/":
        raise SmartError(f"device: {device!r} is not a device path under /dev")
    return device


def _type(dtype: str) -> list[str]:
    if not dtype:
        return []
    if not DEVICE_TYPE.fullmatch(dtype):
        raise SmartError(f"device type: {dtype!r} is not one smartctl knows")
    return ["-d", dtype]


def scan_argv(open_: bool = False) -> list[str]:
    """--scan lists the devices without opening them (no command reaches a disk); --scan-open opens each to learn
    its type, which sends a SATA disk IDENTIFY DEVICE (QEMU's IDE trace shows it): only for a disk not seen before."""
    return [SMARTCTL, "--scan-open" if open_ else "--scan", "-j"]


def read_argv(device: str, dtype: str = "") -> list[str]:
    """Everything the drive tells (-x), skipped when it sleeps (-n standby: its power mode is asked first)."""
    return [SMARTCTL, "-n", "standby", "-j", "-x", *_type(dtype), "--", _device(device)]


def self_test_argv(device: str, kind: str, dtype: str = "") -> list[str]:
    if kind not in SELF_TESTS:
        raise SmartError(f"kind: {kind!r} is not one of {', '.join(SELF_TESTS)}")
    return [SMARTCTL, "-j", "-t", kind, *_type(dtype), "--", _device(device)]


def abort_argv(device: str, dtype: str = "") -> list[str]:
    return [SMARTCTL, "-j", "-X", *_type(dtype), "--", _device(device)]


def decode_exit(status: int) -> list[str]:
    """smartctl's exit status → the keys of its set bits (EXIT_BITS), lowest first."""
    return [key for i, (key, _) in enumerate(EXIT_BITS) if status >> i & 1]


@dataclass
class ScannedDisk:
    device: str  # /dev/sda, /dev/nvme0
    type: str  # sat, nvme, scsi …
    protocol: str  # ATA, NVMe, SCSI
    error: str = ""  # --scan-open could not open it


def parse_scan(text: str) -> list[ScannedDisk]:
    try:
        doc = json.loads(text or "{}")
    except ValueError:
        raise SmartError("smartctl printed no JSON: Tarn needs smartctl 7.0 or newer (-j)") from None
    if not isinstance(doc, dict):
        raise SmartError("smartctl's scan is not the JSON Tarn knows")
    disks = []
    for dev in doc.get("devices") or []:
        if not isinstance(dev, dict) or not DEVICE.fullmatch(str(dev.get("name", ""))):
            continue
        disks.append(
            ScannedDisk(
                device=dev["name"],
                type=str(dev.get("type") or ""),
                protocol=str(dev.get("protocol") or ""),
                error=str(dev.get("open_error") or ""),
            )
        )
    return disks


@dataclass
class Attribute:
    id: int
    name: str
    value: int | None  # normalised
    worst: int | None
    thresh: int | None
    raw: int
    raw_string: str
    prefailure: bool
    when_failed: str  # "", "now", "past"


@dataclass
class SelfTest:
    kind: str  # "Short offline", "Extended", …
    status: str
    passed: bool | None  # None: aborted or interrupted, no verdict
    hours: int | None  # the drive's power-on hours when it ran
    remaining: int | None = None  # percent, for a test in progress


@dataclass
class Reading:
    """One smartctl read of one disk, as parsed (state and reasons come from judge())."""

    device: str
    exit_status: int = 0
    flags: list[str] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)
    protocol: str = ""
    asleep: str = ""  # the power mode it sleeps in, when -n standby skipped it
    smart: bool | None = None  # SMART available and enabled (None: not said)
    model: str = ""
    serial: str = ""
    firmware: str = ""
    capacity: int = 0
    rotation: int | None = None  # rpm; 0: solid state
    hours: int | None = None
    temperature: int | None = None
    temp_warn: int | None = None  # the drive's own limits, when it states them
    temp_crit: int | None = None
    passed: bool | None = None  # the drive's overall assessment
    attributes: list[Attribute] = field(default_factory=list)
    nvme: dict = field(default_factory=dict)
    error_count: int | None = None
    self_tests: list[SelfTest] = field(default_factory=list)  # newest first
    testing: int | None = None  # percent remaining of a self-test in progress
    self_test_kinds: list[str] = field(default_factory=list)  # what it can run of SELF_TESTS
    self_test_minutes: dict[str, int] = field(default_factory=dict)  # how long the drive says each kind takes

    @property
    def refused(self) -> bool:
        """smartctl did not do what it was asked (bad arguments, no device, a command that failed)."""
        return bool({"usage", "open", "command"} & set(self.flags))


def _int(value) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _get(doc, *path):
    for key in path:
        if not isinstance(doc, dict):
            return None
        doc = doc.get(key)
    return doc


def parse(text: str, exit_status: int, device: str = "") -> Reading:
    """`smartctl -n standby -j -x` output and exit status → a Reading. Text that is not JSON (smartctl missing, a
    crash) gives a reading with only the exit status and the text's last line as its message."""
    try:
        doc = json.loads(text)
        doc = doc if isinstance(doc, dict) else {}
    except ValueError:
        doc = {}
    messages = [
        str(m.get("string", "")).strip() for m in _get(doc, "smartctl", "messages") or [] if isinstance(m, dict)
    ]
    if not doc and text.strip():
        messages.append(text.strip().splitlines()[-1][:300])
    status = _int(_get(doc, "smartctl", "exit_status"))
    status = exit_status if status is None else status
    r = Reading(device=device or str(_get(doc, "device", "name") or ""), exit_status=status)
    r.flags, r.messages = decode_exit(status), [m for m in messages if m]
    r.protocol = str(_get(doc, "device", "protocol") or "")
    asleep = next((m for m in map(ASLEEP.search, r.messages) if m), None)
    if asleep and "open" in r.flags:
        r.asleep = asleep.group(1)
        return r
    available, enabled = _get(doc, "smart_support", "available"), _get(doc, "smart_support", "enabled")
    if isinstance(available, bool):
        r.smart = available and enabled is not False
    r.model = str(doc.get("model_name") or _get(doc, "scsi_model_name") or "").strip()
    r.serial = str(doc.get("serial_number") or "").strip()
    r.firmware = str(doc.get("firmware_version") or _get(doc, "scsi_revision") or "").strip()
    r.capacity = _int(_get(doc, "user_capacity", "bytes")) or _int(doc.get("nvme_total_capacity")) or 0
    r.rotation = _int(doc.get("rotation_rate"))
    r.hours = _int(_get(doc, "power_on_time", "hours"))
    r.temperature = _int(_get(doc, "temperature", "current"))
    r.temp_warn = _int(_get(doc, "temperature", "op_limit_max")) or _int(
        _get(doc, "nvme_composite_temperature_threshold", "warning")
    )
    r.temp_crit = _int(_get(doc, "temperature", "limit_max")) or _int(
        _get(doc, "nvme_composite_temperature_threshold", "critical")
    )
    r.passed = _get(doc, "smart_status", "passed")
    r.passed = r.passed if isinstance(r.passed, bool) else None
    _ata(doc, r)
    _nvme(doc, r)
    return r


def _ata(doc: dict, r: Reading) -> None:
    for row in _get(doc, "ata_smart_attributes", "table") or []:
        if not isinstance(row, dict) or _int(row.get("id")) is None:
            continue
        raw = _get(row, "raw", "value")
        r.attributes.append(
            Attribute(
                id=row["id"],
                name=str(row.get("name") or ""),
                value=_int(row.get("value")),
                worst=_int(row.get("worst")),
                thresh=_int(row.get("thresh")),
                raw=_int(raw) or 0,
                raw_string=str(_get(row, "raw", "string") or raw or ""),
                prefailure=bool(_get(row, "flags", "prefailure")),
                when_failed=str(row.get("when_failed") or ""),
            )
        )
    log = _get(doc, "ata_smart_error_log")
    if isinstance(log, dict):
        r.error_count = _int(_get(log, "extended", "count"))
        r.error_count = _int(_get(log, "summary", "count")) if r.error_count is None else r.error_count
    # The extended log (-x reads it where the drive has one) holds more entries than the standard one; either is
    # newest first.
    tests = _get(doc, "ata_smart_self_test_log", "extended", "table")
    tests = tests if tests is not None else _get(doc, "ata_smart_self_test_log", "standard", "table")
    for row in tests or []:
        if not isinstance(row, dict):
            continue
        passed = _get(row, "status", "passed")
        r.self_tests.append(
            SelfTest(
                kind=str(_get(row, "type", "string") or ""),
                status=str(_get(row, "status", "string") or ""),
                passed=passed if isinstance(passed, bool) else None,
                hours=_int(row.get("lifetime_hours")),
            )
        )
    status = _get(doc, "ata_smart_data", "self_test", "status")
    if isinstance(status, dict) and _int(status.get("value")) is not None and status["value"] >> 4 == 0xF:
        r.testing = _int(status.get("remaining_percent")) or 0
    capabilities = _get(doc, "ata_smart_data", "capabilities") or {}
    if capabilities.get("self_tests_supported"):
        r.self_test_kinds = list(SELF_TESTS)
    polling = _get(doc, "ata_smart_data", "self_test", "polling_minutes") or {}
    minutes = {"short": _int(polling.get("short")), "long": _int(polling.get("extended"))}
    r.self_test_minutes = {k: v for k, v in minutes.items() if v is not None}


NVME_ABORTED = {1, 2, 3, 4, 8, 9}  # aborted: no verdict (0 passed; 5, 6, 7 failed)


def _nvme(doc: dict, r: Reading) -> None:
    log = _get(doc, "nvme_smart_health_information_log")
    if isinstance(log, dict):
        r.nvme = {
            key: _int(log.get(key))
            for key in (
                "critical_warning",
                "available_spare",
                "available_spare_threshold",
                "percentage_used",
                "media_errors",
                "num_err_log_entries",
                "unsafe_shutdowns",
            )
        }
        r.error_count = r.nvme["num_err_log_entries"]
        if r.temperature is None:
            r.temperature = _int(log.get("temperature"))
        if r.hours is None:
            r.hours = _int(log.get("power_on_hours"))
    tests = _get(doc, "nvme_self_test_log")
    if not isinstance(tests, dict):
        return  # smartctl < 7.4, or a drive without self-tests (smartctl prints the log only where it has them)
    r.self_test_kinds = list(SELF_TESTS)
    for row in tests.get("table") or []:
        if not isinstance(row, dict):  # smartctl fills the log's unused slots before a used one with null
            continue
        result = _int(_get(row, "self_test_result", "value"))
        r.self_tests.append(
            SelfTest(
                kind=str(_get(row, "self_test_code", "string") or ""),
                status=str(_get(row, "self_test_result", "string") or ""),
                passed=None if result is None or result in NVME_ABORTED else result == 0,
                hours=_int(row.get("power_on_hours")),
            )
        )
    if _int(_get(tests, "current_self_test_operation", "value")):
        r.testing = 100 - (_int(tests.get("current_self_test_completion_percent")) or 0)


# --- judging ----------------------------------------------------------------------------------------------------
OK, WATCH, FAILING, ASLEEP_STATE, UNSUPPORTED, SILENT = "ok", "watch", "failing", "asleep", "unsupported", "silent"
VIRTIO = re.compile(r"/dev/vd[a-z]+")  # virtio_blk's disks: a VM's, the hypervisor's SMART never reaches them


def no_smart(device: str, said: str) -> str:
    """Why a disk has no SMART, in words: a virtio disk says so plainly; another quotes smartctl (without the device
    its message starts with, which names a device read without being given one)."""
    named = re.match(r"(/dev/\S+): ", said)
    if VIRTIO.fullmatch(device or (named.group(1) if named else "")):
        return "a virtio disk: virtio disks report no SMART (watch the physical disk on the host that runs this VM)"
    said = said[named.end() :] if named else said
    return f"no SMART data ({said})" if said else "the device reports no SMART data"


def judge(r: Reading, *, wear_limit: int = 80, hot: int = 60) -> tuple[str, list[str]]:
    """A reading → (state, reasons). hot: the temperature limit for a drive that states none of its own;
    wear_limit: an NVMe drive's percentage used that is worth watching."""
    if r.asleep:
        return ASLEEP_STATE, [f"in {r.asleep} mode: not woken to be read"]
    if "usage" in r.flags or ("open" in r.flags and not r.model and not r.serial):
        said = next((m for m in r.messages if NO_SMART.search(m)), None)
        if said:
            return UNSUPPORTED, [no_smart(r.device, said)]
        return SILENT, [r.messages[-1] if r.messages else "smartctl could not read it"]
    if r.smart is False or (not r.attributes and not r.nvme and r.passed is None):
        said = next((m for m in r.messages if NO_SMART.search(m)), "")
        return UNSUPPORTED, [no_smart(r.device, said)]
    failing, watch = [], []
    if r.passed is False or "failing" in r.flags:
        failing.append("the drive's own assessment is FAILING")
    for a in r.attributes:
        if a.when_failed == "now" or (a.prefailure and a.thresh and a.value is not None and a.value <= a.thresh):
            failing.append(f"attribute {a.id} {a.name} is at or below its threshold")
        elif a.when_failed == "past":
            watch.append(f"attribute {a.id} {a.name} was at or below its threshold in the past")
        if a.id in WATCHED and a.raw > 0:
            watch.append(f"{WATCHED[a.id]} ({a.id}): {a.raw}")
    warning = r.nvme.get("critical_warning") or 0
    for bit, words in NVME_WARNINGS:
        if warning & bit:
            (failing if bit & NVME_FAILING else watch).append(f"NVMe critical warning: {words}")
    spare, spare_min = r.nvme.get("available_spare"), r.nvme.get("available_spare_threshold")
    if spare is not None and spare_min is not None and spare < spare_min and not warning & 0x01:
        failing.append(f"available spare {spare}% below its threshold {spare_min}%")
    used = r.nvme.get("percentage_used")
    if used is not None and used >= wear_limit:
        watch.append(f"{used}% of its rated endurance used")
    if r.nvme.get("media_errors"):
        watch.append(f"media and integrity errors: {r.nvme['media_errors']}")
    limit = r.temp_warn or hot
    if r.temperature is not None and r.temperature > limit:
        watch.append(f"{r.temperature} °C, above {limit} °C")
    last = next((t for t in r.self_tests if t.passed is not None), None)
    if last is not None and last.passed is False:
        failing.append(f"the last self-test failed: {last.kind}, {last.status}")
    if failing:
        return FAILING, failing + watch
    if watch:
        return WATCH, watch
    return OK, []


# --- on a host --------------------------------------------------------------------------------------------------
def _smartctl(transport: Transport, argv: list[str], timeout: float, mutating=False) -> Reading:
    """smartctl exits non-zero for findings too: its status is decoded, not raised; only a missing smartctl is
    (ToolMissing, exit status 127: nothing of the host can be read)."""
    result = transport.run(argv, timeout=timeout, check=False, mutating=mutating, max_output=4 << 20)
    if result.returncode == 127:
        raise error_for(argv, result.returncode, result.stderr)
    return parse(result.stdout, result.returncode, argv[-1])


def scan(transport: Transport, open_: bool = False) -> list[ScannedDisk]:
    argv = scan_argv(open_)
    result = transport.run(argv, timeout=60, check=False)
    if result.returncode == 127:
        raise error_for(argv, result.returncode, result.stderr)
    return parse_scan(result.stdout)


def read(transport: Transport, device: str, dtype: str = "", timeout: float = READ_SECONDS) -> Reading:
    return _smartctl(transport, read_argv(device, dtype), timeout)


def self_test(transport: Transport, device: str, kind: str, dtype: str = "") -> Reading:
    return _smartctl(transport, self_test_argv(device, kind, dtype), 60, mutating=True)


def abort(transport: Transport, device: str, dtype: str = "") -> Reading:
    return _smartctl(transport, abort_argv(device, dtype), 60, mutating=True)
