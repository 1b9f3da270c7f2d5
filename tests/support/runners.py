"""Test-only pieces around operations: the runners only tests register (loaded into a real worker with `celery worker
--include tests.support.runners`), and FakeHost, a recording fake transport that lets a runner's unit test assert the
exact commands and files without a lab."""

import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from appliance import connect
from appliance.operations import operation_runner
from hostlib import kernel, runner
from hostlib.errors import Busy, PathNotAllowed, UnknownParameter
from hostlib.runner import CommandResult, Transport


@operation_runner("test.x", "test.y", lock="test")
def nothing(tracker) -> None:
    """Two kinds that hold the same lock (host:<name>:test[:<subject>]) for the tests of targets and queues."""


@operation_runner("test.bench", lock="bench-test", queue="bench")
def nothing_on_the_bench(tracker) -> None:
    """A kind declared for the host's bench queue."""


@operation_runner("test.fail")
def failing_operation(tracker) -> None:
    tracker.progress(30, "about to fail")
    raise Busy(["zpool", "export", "tank"], 1, "cannot export 'tank': pool is busy\n")


@operation_runner("test.pause", lock="pause")
def pause_operation(tracker) -> None:
    """Holds its host's turn for params["seconds"]."""
    tracker.progress(10, "pausing")
    time.sleep(float(tracker.op.params.get("seconds", 1)))


@operation_runner("test.slow")
def slow_operation(tracker) -> None:
    tracker.progress(10, "sleeping")
    time.sleep(120)


# --- FakeHost --------------------------------------------------------------------------------------------------------

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "host"
# Output captured from the lab guest (see fixtures/host/MANIFEST.json), keyed by the argv Tarn's verbs run today.
CAPTURED = {
    ("ip", "-j", "-d", "-s", "addr", "show"): "ip_addr_details.json",
    ("ip", "-j", "route", "show", "default"): "ip_route_default.json",
    ("ethtool", "-i", "enp0s17"): "ethtool_driver.txt",
    ("ethtool", "enp0s17"): "ethtool_settings.txt",
    ("ethtool", "-g", "enp0s17"): "ethtool_rings.txt",
    ("ethtool", "-k", "enp0s17"): "ethtool_features.txt",
    ("zfs", "version"): "zfs_version.txt",
}
# Files `cat` reads, captured the same way (a `cat` of several gives them one after another, as cat does).
CAPTURED_FILES = {
    "/proc/spl/kstat/zfs/arcstats": "arcstats.txt",
    "/proc/meminfo": "meminfo.txt",
    "/proc/sys/kernel/osrelease": "osrelease.txt",
    "/sys/module/zfs/version": "zfs_module_version.txt",
}

# Sysctls the kernel takes but never shows (mode 0200: not in `sysctl -a`, not in the captured list).
WRITE_ONLY = {"vm.drop_caches", "vm.compact_memory"}


def captured(name: str) -> str:
    return (FIXTURES / name).read_text()


def _no_real_commands(argv, **_):
    raise AssertionError(f"a test with a FakeHost ran a real command: {argv}")


@dataclass
class Call:
    """One thing a runner asked of the host: a command, or write_file / remove_file / module_parameter (then argv
    is [verb, path or module, …] and text the file's content)."""

    argv: list[str]
    mutating: bool
    read_only: bool  # the transport it came through was read-only (a plan)
    text: str | bytes | None = None


@dataclass
class Rule:
    prefix: tuple[str, ...]
    stdout: str
    returncode: int
    stderr: str


class FakeHost:
    """A host for runner tests: reads are answered with output captured from the lab guest, every command and file
    write is recorded in order (`calls`), and nothing runs.

    Answers, first match wins: those given with answer() (the latest first); the kernel tunables, served from
    their captured lists (`sysctl`, `zfs`) and changed by `sysctl -w` and module_parameter as the kernel would;
    `cat` over the files written so far (`files`) and the captured ones (CAPTURED_FILES), `find` over `files`; the
    captured outputs in CAPTURED; else exit 0 with no output. Commands still go through Transport.run: the tool
    allowlist, read-only refusals and error typing are the real ones.
    """

    def __init__(self):
        self.calls: list[Call] = []
        self.rules: list[Rule] = []
        self.watchers: list[tuple[tuple[str, ...], Callable[[list[str]], None]]] = []
        self.files: dict[str, str] = {}
        self.groups: dict[str, str] = {}  # path -> the group a write_file gave it (root's when absent)
        self.links: set[str] = set()  # paths planted as links: a mount folder at or below one is refused
        self.opened: list[tuple[str, bool]] = []  # (host name, read_only) per transport_for()
        self.environments: list[tuple[list[str], dict[str, str]]] = []  # (argv, env) of commands given an env
        self.sysctl = dict(line.split(" = ", 1) for line in captured("sysctl_tunables.txt").splitlines())
        self.zfs = {}
        for line in captured("zfs_parameters.txt").splitlines():
            path, _, value = line.partition(":")
            self.zfs[path.rsplit("/", 1)[1]] = value

    # -- set-up ---------------------------------------------------------------------------------------------------
    def answer(self, *prefix: str, stdout: str = "", returncode: int = 0, stderr: str = "") -> "FakeHost":
        """Answer commands whose argv starts with prefix with this (the latest matching answer wins)."""
        self.rules.append(Rule(tuple(prefix), stdout, returncode, stderr))
        return self

    def on(self, *prefix: str, call: Callable[[list[str]], None]) -> "FakeHost":
        """Call call(argv) when a command starting with prefix is about to run: to look at the database mid-run, or
        to raise as a host that went away would. The answer is unchanged."""
        self.watchers.append((tuple(prefix), call))
        return self

    def transport(self, *, read_only: bool = False) -> "FakeTransport":
        return FakeTransport(read_only=read_only, fake=self)

    def install(self, monkeypatch) -> "FakeHost":
        """Hand out this host from every transport_for() (appliance.connect's, in each module that imported it,
        Tracker.transport() included), and fail the test on any real command."""

        def transport_for(host, *, user=None, operation=None, read_only=None):
            ro = host.read_only if read_only is None else read_only
            self.opened.append((host.name, ro))
            return self.transport(read_only=ro)

        real = connect.transport_for
        for module in list(sys.modules.values()):
            if getattr(module, "__dict__", {}).get("transport_for") is real:
                monkeypatch.setattr(module, "transport_for", transport_for)
        monkeypatch.setattr(runner, "_spawn", _no_real_commands)
        return self

    # -- what happened --------------------------------------------------------------------------------------------
    @property
    def argvs(self) -> list[list[str]]:
        return [c.argv for c in self.calls]

    @property
    def mutations(self) -> list[list[str]]:
        """The changing calls in order, writes included as [write_file, path, mode]."""
        return [c.argv for c in self.calls if c.mutating]

    @property
    def writes(self) -> list[tuple[str, str]]:
        """(path, text) of every write_file, in order."""
        return [(c.argv[1], c.text) for c in self.calls if c.argv[0] == "write_file"]

    def reset(self) -> None:
        self.calls.clear()

    # -- the transport's side -------------------------------------------------------------------------------------
    def execute(self, argv: list[str], *, input, mutating: bool, read_only: bool) -> CommandResult:
        self.calls.append(Call(argv, mutating, read_only, input))
        for prefix, call in self.watchers:
            if tuple(argv[: len(prefix)]) == prefix:
                call(argv)
        for rule in reversed(self.rules):
            if tuple(argv[: len(rule.prefix)]) == rule.prefix:
                return CommandResult(argv, rule.returncode, rule.stdout, rule.stderr, 0.0, mutating)
        found = self._answer(argv)
        if found is None:
            found = (captured(CAPTURED[tuple(argv)]), 0, "") if tuple(argv) in CAPTURED else ("", 0, "")
        return CommandResult(argv, found[1], found[0], found[2], 0.0, mutating)

    def _answer(self, argv: list[str]) -> tuple[str, int, str] | None:
        tool, args = argv[0], argv[1:]
        if tool == "sysctl" and args[:2] == ["-a", "--pattern"]:
            return "".join(f"{k} = {v}\n" for k, v in self.sysctl.items()), 0, ""
        if tool == "sysctl" and args[:1] == ["--"]:
            return self._lines(args[1:], self.sysctl, lambda k: f"{k} = {self.sysctl[k]}")
        if tool == "sysctl" and args[:2] == ["-q", "-w"]:
            key, _, value = args[2].partition("=")
            if key in WRITE_ONLY:
                return "", 0, ""
            if key not in self.sysctl:
                return "", 255, f"sysctl: cannot stat /proc/sys/{key.replace('.', '/')}: No such file or directory\n"
            self.sysctl[key] = value.replace(" ", "\t")  # the kernel prints several numbers with tabs
            return "", 0, ""
        params = kernel.ZFS_PARAMETERS
        if tool == "grep" and args == ["-r", "-H", ".", "--", params]:
            return "".join(f"{params}/{k}:{v}\n" for k, v in self.zfs.items()), 0, ""
        if tool == "grep" and args[:3] == ["-H", ".", "--"]:
            names = [p.rsplit("/", 1)[1] for p in args[3:]]
            return self._lines(names, self.zfs, lambda k: f"{params}/{k}:{self.zfs[k]}")
        if tool == "cat" and args[:1] == ["--"] and any(p in self.files or p in CAPTURED_FILES for p in args[1:]):
            texts = [
                self.files[p] if p in self.files else captured(CAPTURED_FILES[p]) if p in CAPTURED_FILES else ""
                for p in args[1:]
            ]
            return "".join(texts), 0, ""
        if tool == "find" and args[1:4] == ["-maxdepth", "1", "-name"]:
            folder, prefix = args[0], args[4].rstrip("*")
            found = sorted(
                p for p in self.files if p.rsplit("/", 1)[0] == folder and p.split("/")[-1].startswith(prefix)
            )
            return "".join(p + "\n" for p in found), 0, ""
        return None

    @staticmethod
    def _lines(keys, values, line) -> tuple[str, int, str]:
        missing = [k for k in keys if k not in values]
        err = "".join(f"{k}: No such file or directory\n" for k in missing)
        return "".join(line(k) + "\n" for k in keys if k in values), 1 if missing else 0, err

    def write(self, path: str, text: str | bytes, mode: int, read_only: bool) -> bool:
        self.calls.append(Call(["write_file", path, format(mode, "o")], True, read_only, text))
        changed = self.files.get(path) != text
        self.files[path] = text
        return changed

    def remove(self, path: str, read_only: bool) -> bool:
        self.calls.append(Call(["remove_file", path], True, read_only))
        return self.files.pop(path, None) is not None

    def scratch(self, path: str, create: bool, read_only: bool, tag: str = "") -> str:
        self.calls.append(Call(["scratch", "create" if create else "remove", path], True, read_only))
        return "created" if create else "removed"

    def mount_folder(self, path: str, seal: bool, read_only: bool) -> str:
        self.calls.append(Call(["mount_folder", "seal" if seal else "check", path], seal, read_only))
        parts = path.split("/")
        planted = next((p for p in ("/".join(parts[:i]) for i in range(2, len(parts) + 1)) if p in self.links), None)
        if planted:
            raise PathNotAllowed(f"refusing {path}: {planted} is a symlink or not a folder")
        return "sealed" if seal else "checked"

    def module_parameter(self, module: str, name: str, value: str, read_only: bool) -> str:
        argv = ["module_parameter", module, name, value]
        self.calls.append(Call(argv, True, read_only))
        if module != "zfs" or name not in self.zfs:
            raise UnknownParameter(argv, 4, f"no parameter {name}")
        before, self.zfs[name] = self.zfs[name], value
        return before


@dataclass
class FakeTransport(Transport):
    """The Transport a FakeHost hands out: Transport.run's checks, the FakeHost's answers."""

    fake: FakeHost = field(default_factory=FakeHost)

    def _execute(self, argv, *, timeout, input, mutating, max_output, env=None):
        if env:
            self.fake.environments.append((argv, env))
        return self.fake.execute(argv, input=input, mutating=mutating, read_only=self.read_only)

    def _write(self, path, data, mode, timeout, group=""):
        try:
            text = data.decode()
        except UnicodeDecodeError:  # a binary file (a sealed backup) is recorded as its bytes
            text = data
        if group and not self.read_only:
            self.fake.groups[path] = group
        return self.fake.write(path, text, mode, self.read_only)

    def _remove(self, path, timeout):
        return self.fake.remove(path, self.read_only)

    def _scratch(self, path, create, tag):
        return self.fake.scratch(path, create, self.read_only, tag)

    def _module_parameter(self, module, name, value):
        return self.fake.module_parameter(module, name, value, self.read_only)

    def _mount_folder(self, path, seal):
        return self.fake.mount_folder(path, seal, self.read_only)


_PROGRAMS: list[str] = []  # the folder programs are written to, made once a session


def program(module) -> str:
    """One of Tarn's programs as a host gets it (hostlib.runner.source_of: one file, hostlib.wire inside), written
    to a folder of the session's; its path. Tests run this, not the module's own file, which imports hostlib.wire."""
    if not _PROGRAMS:
        _PROGRAMS.append(tempfile.mkdtemp(prefix="tarn-programs-"))
    path = Path(_PROGRAMS[0]) / f"{module.__name__.rsplit('.', 1)[-1]}.py"
    path.write_text(runner.source_of(module))
    return str(path)
