"""Run commands on a host: argv lists only, allowlisted tools, a timeout on every call, LC_ALL=C.

Two transports with one interface: LocalTransport (subprocess here) and SSHTransport (the ssh
client with a pinned host key and connection sharing). This is the only module that imports
subprocess.
"""

import base64
import fcntl
import hashlib
import inspect
import os
import re
import select
import shlex
import signal
import stat
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from hostlib import atomic, wire
from hostlib.errors import (
    CommandFailed,
    CommandTimeout,
    ConversationEnded,
    HostKeyMismatch,
    HostUnreachable,
    OutputTooLarge,
    PathNotAllowed,
    ReadOnlyHost,
    ToolNotAllowed,
    UnknownParameter,
    error_for,
    last_line,
)

# The host's python3, for Tarn's own programs (standard library only): isolated (-I: no PYTHON* variables, no user
# site, not the working folder) and without site (-S: Debian's site imports cost ~0.1 s a start under emulation).
PYTHON = ("python3", "-I", "-S")


def python(*args: str) -> list[str]:
    """argv for one of Tarn's programs on a host: python(path, …) or python("-c", source, …)."""
    return [*PYTHON, *args]


WIRE_IMPORT = "\nfrom hostlib.wire import dumps, loads\n"  # a line of its own


def source_of(module) -> str:
    """A program's source as a host gets it: one file, hostlib.wire's source in place of its import of it."""
    text = inspect.getsource(module)
    return text.replace(WIRE_IMPORT, f"\n{inspect.getsource(wire)}\n", 1)


# Every tool Tarn may run on a host. Anything else is refused before a process exists.
ALLOWED_TOOLS = frozenset(
    {
        "true",
        "uname",
        "nproc",
        "cat",
        "date",  # the host's clock (date +%s), against a DC's (hostlib.directory)
        "grep",
        "find",
        "which",
        "python3",
        "flock",
        "ssh",  # only a replication pair's check, from the sending NAS (hostlib.replication.pair_check)
        "zpool",
        "zfs",
        "zdb",
        "lsblk",
        "blkid",
        "mountpoint",
        "chattr",
        "od",  # a raw key file read as hex (hostlib.zfs.key_read)
        "wipefs",
        "ip",
        "bridge",
        "ethtool",
        "sysctl",
        "modinfo",
        "smbd",
        "testparm",
        "smbcontrol",
        "smbstatus",
        "smbpasswd",
        "exportfs",
        "showmount",
        "systemctl",
        "install",
        "id",
        "stat",
        "useradd",
        "groupadd",
        "userdel",
        "usermod",
        "fio",
        "iperf3",
        "smartctl",
        "mount",
        "umount",
        "ping",
        "printenv",
        "systemd-run",
        "setpriv",
        "networkctl",
        "tc",
        "ssh-keygen",  # a replication pair's key, made on the sending NAS
        "apt-get",  # updates (hostlib.updates): simulated, then applied as a unit on the host
        "apt-mark",  # a kernel without its zfs module held
        "dpkg",  # --audit: an update cut short, repaired with --configure -a
        "tail",  # the end of an update's log
        "net",  # Samba: join and leave a domain, its state (hostlib.directory)
        "wbinfo",  # winbind: the trust, the domain's users and groups
        "getent",  # local ids, before a domain's idmap ranges are set
        "ldapsearch",  # an LDAP directory's users and groups, paged (hostlib.sssd)
        "sssctl",  # sssd: its configuration checked, its domain online (hostlib.sssd)
        "sss_cache",  # sssd's cache emptied when its directory changes
        "upsc",  # NUT: a UPS's state as upsd serves it (hostlib.nut)
        "targetctl",  # LIO: Tarn's saveconfig.json restored (hostlib.iscsi; python3-rtslib-fb)
    }
)
# Directories write_file may touch (config Tarn owns). Kernel parameters are not files: see kernel.py.
CONFIG_DIRS = (
    "/etc/samba/tarn",
    "/etc/samba/smb.conf",  # one exact file: Tarn appends its include line once (shares.ensure_smb_include)
    "/etc/exports.d",
    "/etc/nfs.conf.d",
    "/etc/sysctl.d",
    "/etc/modprobe.d",
    "/etc/systemd/network",
    "/run/systemd/network",  # a pending bond or VLAN change's hold on its links (net.hold; gone at reboot)
    "/etc/rtslib-fb-target",  # LIO's configuration, rendered by Tarn (hostlib.iscsi)
    "/etc/nut",  # NUT's, rendered by Tarn (hostlib.nut)
    "/etc/systemd/system/rtslib-fb-targetctl.service.d",  # its boot restore ordered after the zvols
    "/etc/tarn",
    "/run/tarn",  # the `ip -batch` scripts of a network change and of its armed restore
    "/usr/local/lib/tarn",  # replication's helpers, tarn-send and tarn-recv
    "/root/.ssh/authorized_keys",  # one exact file: a replication pair's forced-command line (replication.with_line)
    "/var/lib/tarn-recv",  # a push pair's user's authorized_keys (replication.recv_keys; the homes are root's)
    "/var/lib/tarn-backups",  # Tarn's configuration backups pushed to a NAS (hostlib.backups; sealed files)
    "/etc/krb5.conf",  # one exact file: a domain member's realm (hostlib.directory)
    "/etc/nsswitch.conf",  # one exact file: winbind or sss on the passwd and group lines (a domain, a directory)
    # An LDAP client's files, exactly these (hostlib.sssd): sssd.conf, the copy sssctl checks, the CA (and a new one
    # while it is tested), the bind password.
    "/etc/sssd/sssd.conf",
    "/etc/sssd/tarn-check.conf",
    "/etc/sssd/tarn-ldap-ca.pem",
    "/etc/sssd/tarn-ldap-ca.new.pem",
    "/etc/sssd/tarn-ldap-bind",
)
# ssh's shared connection: when the host behind a master goes away (rebooted, or a lab guest restored) the next
# client fails talking to the dying master. These messages come before the command reached the host (OpenSSH
# mux.c: the alive check, the hello, or writing the session request), so any command may be tried again.
MUX_NOT_SENT = (
    "mux_client_request_alive",
    "mux_client_hello_exchange",
    "Control socket connect",
    "mux_client_request_session: write packet",
    "mux_client_request_session: send fds failed",
)
# After the request was written the master may have started the command: only reads are tried again.
MUX_MAYBE_SENT = ("mux_client_",)
SAFE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
DEFAULT_TIMEOUT = 60.0
# Output a command may print (stdout and stderr each) before it is stopped: a host cannot make Tarn hold more.
# The inventory's listings, which grow with the pool, ask for more (zfs.LISTING_MAX_OUTPUT).
DEFAULT_MAX_OUTPUT = 64 << 20
# What a command may be given in its environment beyond LC_ALL, LANG and PATH: names Tarn knows, values of letters
# and digits. PASSWD_FD=0: Samba's tools read a password from stdin, never from argv (/proc/PID/cmdline is
# world-readable) and without printing a prompt.
ENV_ALLOWED = frozenset({"PASSWD_FD", "LDAPTLS_CACERT", "LDAPTLS_REQCERT"})  # LDAPTLS_*: ldapsearch's CA
ENV_VALUE = re.compile(r"[A-Za-z0-9_./-]{1,64}")


def retry_after_mux_failure(returncode: int, stderr: str, *, mutating: bool) -> bool:
    """True when ssh failed on its shared connection in a way that makes trying once more safe."""
    if returncode != 255:
        return False
    if any(m in stderr for m in MUX_NOT_SENT):
        return True
    return not mutating and any(m in stderr for m in MUX_MAYBE_SENT)


@dataclass(frozen=True)
class CommandResult:
    argv: list[str]
    returncode: int
    stdout: str
    stderr: str
    duration: float
    mutating: bool = False


AuditHook = Callable[[CommandResult], None]


@dataclass
class Transport:
    """What both transports share: the allowlist, read-only mode, audit hook and error typing."""

    read_only: bool = False
    on_command: AuditHook | None = None
    extra_tools: frozenset[str] = frozenset()
    writable_dirs: tuple[str, ...] = CONFIG_DIRS

    @property
    def privileged(self) -> bool:
        """Do commands run as root there? (A NAS is managed as root.)"""
        return False

    def run(
        self,
        argv: list[str],
        *,
        timeout: float = DEFAULT_TIMEOUT,
        input: str | bytes | None = None,
        check: bool = True,
        mutating: bool = False,
        max_output: int = DEFAULT_MAX_OUTPUT,
        env: dict[str, str] | None = None,
    ) -> CommandResult:
        """env: variables from ENV_ALLOWED for this command (its values checked against ENV_VALUE)."""
        argv = [str(a) for a in argv]
        if not argv or argv[0] not in ALLOWED_TOOLS | self.extra_tools:
            raise ToolNotAllowed(f"{argv[0] if argv else '(empty)'} is not an allowed tool")
        if mutating and self.read_only:
            raise ReadOnlyHost(f"read-only host: would run {shlex.join(argv)}")
        extra = {}
        if env:
            bad = [k for k, v in env.items() if k not in ENV_ALLOWED or not ENV_VALUE.fullmatch(str(v))]
            if bad:
                raise ToolNotAllowed(f"environment not allowed for {argv[0]}: {', '.join(sorted(bad))}")
            extra["env"] = {k: str(v) for k, v in env.items()}
        result = self._execute(argv, timeout=timeout, input=input, mutating=mutating, max_output=max_output, **extra)
        if mutating and self.on_command:
            self.on_command(result)
        if check and result.returncode != 0:
            raise error_for(argv, result.returncode, result.stderr)
        return result

    def read_file(self, path: str, *, timeout: float = 10.0) -> str:
        return self.run(["cat", "--", path], timeout=timeout).stdout

    def write_file(
        self, path: str, text: str | bytes, *, mode: int = 0o644, group: str = "", timeout: float = 30.0
    ) -> bool:
        """Atomically write text (or bytes) unless the file already holds it; True if anything changed. group: the
        file's group by name (a daemon reading it as that group), root's otherwise."""
        if self.read_only:
            raise ReadOnlyHost(f"read-only host: would write {path}")
        started = time.monotonic()
        if group and not re.fullmatch(r"[a-z_][a-z0-9_-]{0,31}", group):
            raise PathNotAllowed(f"refusing group {group!r} for {path}")
        changed = self._write(path, text.encode() if isinstance(text, str) else text, mode, timeout, group)
        if self.on_command:
            self.on_command(
                CommandResult(
                    ["write_file", path, format(mode, "o")],
                    0,
                    "changed" if changed else "unchanged",
                    "",
                    time.monotonic() - started,
                    True,
                )
            )
        return changed

    def folder(self, path: str, owner: str, group: str, mode: int, *, create: bool = False) -> str:
        """Owner, group and mode of a folder reached without following symlinks (atomic.folder); returns
        'before → after'. Refused (PathNotAllowed) when any component is a link."""
        if self.read_only:
            raise ReadOnlyHost(f"read-only host: would change {path}")
        started = time.monotonic()
        outcome = self._folder(path, owner, group, mode, create)
        if self.on_command:
            argv = ["folder", path, owner, group, format(mode, "o"), *(["create"] if create else [])]
            self.on_command(CommandResult(argv, 0, outcome, "", time.monotonic() - started, True))
        return outcome

    def scratch(self, path: str, *, create: bool, tag: str = "") -> str:
        """Make (new, mode 0777) or remove (with its contents) a benchmark's scratch folder tarnbench-<n>, never
        through a link (atomic.scratch); with a tag, removed only if made with it. Returns created, removed,
        absent or not ours."""
        if self.read_only:
            raise ReadOnlyHost(f"read-only host: would change {path}")
        started = time.monotonic()
        outcome = self._scratch(path, create, tag)
        if self.on_command:
            argv = ["scratch", "create" if create else "remove", path]
            self.on_command(CommandResult(argv, 0, outcome, "", time.monotonic() - started, True))
        return outcome

    def mount_folder(self, path: str, *, seal: bool) -> str:
        """Check (and with seal, make immutable) a dataset's mount folder reached without following any link
        (atomic.mount_folder): mounted, sealed, checked or absent. A link as the folder or on its way is refused
        (PathNotAllowed); a flag the kernel refuses is CommandFailed."""
        if seal and self.read_only:
            raise ReadOnlyHost(f"read-only host: would seal {path}")
        started = time.monotonic()
        outcome = self._mount_folder(path, seal)
        if self.on_command and seal:
            argv = ["mount_folder", "seal", path]
            self.on_command(CommandResult(argv, 0, outcome, "", time.monotonic() - started, True))
        return outcome

    def remove_file(self, path: str, *, timeout: float = 30.0) -> bool:
        """Remove a file Tarn owns (same allowlist and no-symlink rule as write_file); True if it existed."""
        if self.read_only:
            raise ReadOnlyHost(f"read-only host: would remove {path}")
        started = time.monotonic()
        removed = self._remove(path, timeout)
        if self.on_command:
            self.on_command(
                CommandResult(
                    ["remove_file", path], 0, "removed" if removed else "absent", "", time.monotonic() - started, True
                )
            )
        return removed

    def module_parameter(self, module: str, name: str, value: str) -> str:
        """Set a kernel module's runtime parameter (atomic.module_parameter); returns the value before. A missing
        parameter is UnknownParameter; a value the kernel refuses, CommandFailed."""
        if self.read_only:
            raise ReadOnlyHost(f"read-only host: would set {module}.{name}")
        started = time.monotonic()
        before = self._module_parameter(module, name, value)
        if self.on_command:
            argv = ["module_parameter", module, name, value]
            self.on_command(CommandResult(argv, 0, before, "", time.monotonic() - started, True))
        return before

    def _execute(self, argv, *, timeout, input, mutating, max_output=DEFAULT_MAX_OUTPUT) -> CommandResult:
        raise NotImplementedError

    def _kept_key(self) -> str | None:
        """What tells this host's kept conversations from another's; None: this transport keeps none."""
        return None

    def _converse(self, argv: list[str]) -> "Conversation | None":
        return None

    def _module_parameter(self, module, name, value) -> str:
        raise NotImplementedError

    def _remove(self, path, timeout) -> bool:
        raise NotImplementedError

    def _folder(self, path, owner, group, mode, create) -> str:
        raise NotImplementedError

    def _scratch(self, path, create, tag) -> str:
        raise NotImplementedError

    def _mount_folder(self, path, seal) -> str:
        raise NotImplementedError

    def _write(self, path, data, mode, timeout, group="") -> bool:
        raise NotImplementedError


ASK_SECONDS = 30  # a health question's answer, or "no answer"


def asked(t: "Transport", argv: list[str], timeout: float = ASK_SECONDS, **kwargs) -> CommandResult:
    """A health question to a host (a domain's DC, an LDAP server behind it): one cut off (gone, not refusing) makes
    the tools wait on the network; past timeout that is the answer, exit status 124 and "no answer", not an error."""
    try:
        return t.run(argv, check=False, timeout=timeout, **kwargs)
    except CommandTimeout:
        return CommandResult(argv, 124, "", f"no answer within {timeout:.0f} s\n", float(timeout))


def tools_missing(t: "Transport", tools: tuple[str, ...]) -> list[str]:
    """The programs of `tools` the host lacks (one `which` for all of them)."""
    found = t.run(["which", *tools], check=False, timeout=30).stdout.split()
    return [tool for tool in tools if not any(path.endswith("/" + tool) for path in found)]


def _spawn(
    argv: list[str],
    *,
    timeout: float,
    input: str | None,
    env: dict,
    max_output: int = DEFAULT_MAX_OUTPUT,
    watch: Callable[[], None] | None = None,
) -> tuple[int, str, str, float]:
    """Run argv in its own process group; on timeout, or once it has printed more than max_output bytes on stdout
    or stderr, kill the whole group (children included) and raise. Never more than max_output is read back.
    watch, if given, is called every slice while it runs.

    Output goes to temporary files, not pipes: a process that outlives the command on purpose
    (ssh's shared-connection master) must not hold the call open by keeping a pipe.
    """
    started = time.monotonic()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        try:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                env=env,
                start_new_session=True,
                close_fds=True,
            )
        except FileNotFoundError:  # as a shell says it over SSH: the same exit status and message on both transports
            return 127, "", f"{argv[0]}: command not found\n", time.monotonic() - started
        feeder = _feed(proc, input.encode() if isinstance(input, str) else input)
        step = 0.005
        try:
            while True:  # in short slices (growing to 0.2 s), watching how much it printed
                remaining = started + timeout - time.monotonic()
                try:
                    proc.wait(timeout=max(0.0, min(step, remaining)))
                    break
                except subprocess.TimeoutExpired:
                    step = min(step * 2, 0.2)
                    if watch:
                        watch()
                    if _printed(out, err) > max_output:
                        _kill(proc)
                        raise OutputTooLarge(argv, max_output) from None
                    if remaining <= 0:
                        _kill(proc)
                        raise CommandTimeout(argv, timeout) from None
        finally:
            if feeder:
                feeder.join(timeout=5)  # ended: the command read it all, or exited (a broken pipe)
        if _printed(out, err) > max_output:
            raise OutputTooLarge(argv, max_output)
        out.seek(0)
        err.seek(0)
        return (
            proc.returncode,
            out.read().decode(errors="replace"),
            err.read().decode(errors="replace"),
            (time.monotonic() - started),
        )


def _feed(proc: subprocess.Popen, data: bytes | None) -> threading.Thread | None:
    """Write data to the command's stdin and close it, in a thread of its own: a command may read its input late or
    slowly (more than a pipe holds), and the slices above must go on watching it meanwhile. Not communicate(): retried
    after a slice's timeout without the input again, it never writes the rest nor closes stdin (the command waits)."""
    if proc.stdin is None:
        return None

    def write():
        try:
            if data:
                proc.stdin.write(data)
        except (BrokenPipeError, OSError):
            pass  # the command exited (or was stopped) without reading it all: its exit status tells
        finally:
            try:
                proc.stdin.close()
            except (BrokenPipeError, OSError):
                pass

    feeder = threading.Thread(target=write, name="tarn-stdin", daemon=True)
    feeder.start()
    return feeder


def _printed(out, err) -> int:
    """Bytes the command has printed so far, on the larger of its two streams (spooled to files)."""
    return max(os.fstat(out.fileno()).st_size, os.fstat(err.fileno()).st_size)


def _kill(proc: subprocess.Popen) -> None:
    os.killpg(proc.pid, signal.SIGKILL)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:  # stuck in the kernel (D state): give up waiting, still report it
        pass


# A conversation: one of Tarn's programs kept running on a host to answer several questions, a line each way. Its
# start (python3 and the compiling of its source, most of a small question's time on a slow host: ~0.15 s of 0.3 under
# emulation) is paid once for the questions that follow, as when an admin pages through folders. Reads only: what
# changes a host is an Operation's command, run once. The program on the host ends at the end of its input, after
# its own idle time (60 s for the snapshot reader) or KEPT_LIFETIME; Tarn keeps an unused one KEPT_IDLE seconds.
KEPT_IDLE = 45.0
KEPT_LIFETIME = 3600
KEPT_MOST = 16  # unused conversations kept by one process (the one unused longest goes first)


class Conversation:
    """A program answering questions, a line each way (argv: as checked and started). Its stderr is not kept (a host
    could fill Tarn's disk with it over an hour): a program that ends is asked again the usual way, which says why."""

    def __init__(self, argv: list[str], proc: subprocess.Popen, lifetime: float = KEPT_LIFETIME):
        self.argv, self.proc = argv, proc
        self.started = self.used = time.monotonic()
        self.ends = self.started + lifetime
        self.pid = os.getpid()  # a forked child does not talk on its parent's pipes
        self.asking = False  # a question sent and its answer not read whole: never kept, never asked again
        self._pending = bytearray()
        os.set_blocking(proc.stdin.fileno(), False)  # a host that does not read its input cannot hold a write

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None and self.pid == os.getpid() and not self.asking

    def ask(self, question: bytes, *, timeout: float, max_output: int = DEFAULT_MAX_OUTPUT) -> bytes:
        """The answer (one line, without its newline) to one question (one line), both within timeout.
        ConversationEnded: the program was gone before it answered (ask another way); CommandTimeout and
        OutputTooLarge end the conversation, as any other failure between the question and its whole answer does."""
        if b"\n" in question:
            raise ValueError("a question is one line")
        if not self.alive or self._pending:
            raise ConversationEnded(self.argv)
        deadline = time.monotonic() + timeout
        self.asking = True
        try:
            self._send(memoryview(question + b"\n"), deadline, timeout)
            answer = self._receive(deadline, timeout, max_output)
        except BaseException:
            self.close()
            raise
        self.asking = False
        self.used = time.monotonic()
        return answer

    def _wait(self, fd: int, events: int, deadline: float, timeout: float) -> bool:
        """Did fd become ready (for events) before the deadline? CommandTimeout once it has passed."""
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise CommandTimeout(self.argv, timeout)
        poller = select.poll()  # not select(): a descriptor past 1023 is fine
        poller.register(fd, events)
        return bool(poller.poll(int(remaining * 1000) + 1))

    def _send(self, data: memoryview, deadline: float, timeout: float) -> None:
        fd = self.proc.stdin.fileno()
        while data:
            try:
                data = data[os.write(fd, data) :]
            except BlockingIOError:  # its input is full: it reads slowly, or not at all
                self._wait(fd, select.POLLOUT, deadline, timeout)
            except OSError:  # BrokenPipeError: it ended
                raise ConversationEnded(self.argv) from None

    def _receive(self, deadline: float, timeout: float, max_output: int) -> bytes:
        fd = self.proc.stdout.fileno()
        while (end := self._pending.find(b"\n")) < 0:
            if len(self._pending) > max_output:
                raise OutputTooLarge(self.argv, max_output)
            if not self._wait(fd, select.POLLIN, deadline, timeout):
                continue
            chunk = os.read(fd, 1 << 20)
            if not chunk:  # the end of its output: it ended
                raise ConversationEnded(self.argv)
            self._pending += chunk
        if end > max_output:
            raise OutputTooLarge(self.argv, max_output)
        answer = bytes(self._pending[:end])
        del self._pending[: end + 1]
        return answer

    def close(self) -> None:
        """End it: its input closed (the program's end of input), its process group stopped and reaped."""
        if self.pid != os.getpid():
            return
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                stream.close()
            except OSError:
                pass
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(timeout=2)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                _kill(self.proc)


_kept: dict[tuple[str, str], Conversation] = {}  # unused conversations by (host, program)
_kept_lock = threading.Lock()


def _forget_in_child() -> None:
    """A forked child (a Celery process) starts with none: its parent's pipes are its parent's."""
    global _kept_lock
    _kept.clear()
    _kept_lock = threading.Lock()


os.register_at_fork(after_in_child=_forget_in_child)


def _start_conversation(argv: list[str], env: dict) -> Conversation:
    proc = subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env,
        start_new_session=True, close_fds=True, bufsize=0,
    )  # fmt: skip
    return Conversation(argv, proc)


@contextmanager
def kept(t: Transport, argv: list[str], *, longest: float) -> Iterator[Conversation | None]:
    """A conversation with argv's program on t's host for this block's questions: the one kept from an earlier
    block, or one started now; kept again after the block unless it ended. None where t keeps none (ask the usual
    way: a command a question). longest: the longest a question of the block may take (a conversation that could
    reach the end of its lifetime meanwhile is not used)."""
    argv = [str(a) for a in argv]
    if not argv or argv[0] not in ALLOWED_TOOLS | t.extra_tools:
        raise ToolNotAllowed(f"{argv[0] if argv else '(empty)'} is not an allowed tool")
    host = t._kept_key()
    if host is None:
        yield None
        return
    key = (host, hashlib.sha256("\0".join(argv).encode()).hexdigest())
    now, retired = time.monotonic(), []
    with _kept_lock:
        talk = _kept.pop(key, None)
        for k, c in list(_kept.items()):  # the unused past their idle time, and those that ended (reaped here)
            if now - c.used > KEPT_IDLE or not c.alive:
                retired.append(_kept.pop(k))
    if talk is not None and not (talk.alive and now - talk.used < KEPT_IDLE and now + longest < talk.ends):
        retired.append(talk)
        talk = None
    for c in retired:
        c.close()
    if talk is None:
        talk = t._converse(argv)
    if talk is None:
        yield None
        return
    try:
        yield talk
    finally:
        _keep(key, talk)


def _keep(key: tuple[str, str], talk: Conversation) -> None:
    """Keep it for the next block (one a host and program: a second, started while the first was busy, ends)."""
    surplus = [talk]
    if talk.alive:
        with _kept_lock:
            if key not in _kept:
                _kept[key], surplus = talk, []
                if len(_kept) > KEPT_MOST:
                    oldest = min(_kept, key=lambda k: _kept[k].used)
                    surplus.append(_kept.pop(oldest))
    for c in surplus:
        c.close()


def forget_conversations() -> int:
    """End every kept conversation (tests, a host removed or its key changed); how many there were."""
    with _kept_lock:
        talks = list(_kept.values())
        _kept.clear()
    for c in talks:
        c.close()
    return len(talks)


@dataclass
class LocalTransport(Transport):
    """Commands on this machine."""

    @property
    def privileged(self) -> bool:
        return os.geteuid() == 0

    def _execute(self, argv, *, timeout, input, mutating, max_output=DEFAULT_MAX_OUTPUT, env=None):
        env = {"LC_ALL": "C", "LANG": "C", "PATH": SAFE_PATH, "HOME": os.environ.get("HOME", "/root"), **(env or {})}
        rc, out, err, duration = _spawn(argv, timeout=timeout, input=input, env=env, max_output=max_output)
        return CommandResult(argv, rc, out, err, duration, mutating)

    def _kept_key(self):
        return "local"

    def _converse(self, argv):
        env = {"LC_ALL": "C", "LANG": "C", "PATH": SAFE_PATH, "HOME": os.environ.get("HOME", "/root")}
        try:
            return _start_conversation(argv, env)
        except FileNotFoundError:
            return None  # the usual way says it: command not found

    def _write(self, path, data, mode, timeout, group=""):
        try:
            return atomic.write_if_changed(path, data, mode, self.writable_dirs, group)
        except (PermissionError, KeyError) as exc:  # KeyError: no such group
            raise PathNotAllowed(str(exc)) from None

    def _folder(self, path, owner, group, mode, create):
        try:
            return atomic.folder(path, owner, group, mode, create)
        except (PermissionError, KeyError) as exc:
            raise PathNotAllowed(str(exc)) from None

    def _scratch(self, path, create, tag):
        try:
            return atomic.scratch(path, create, tag)
        except PermissionError as exc:
            raise PathNotAllowed(str(exc)) from None

    def _remove(self, path, timeout):
        try:
            return atomic.remove_if_present(path, self.writable_dirs)
        except PermissionError as exc:
            raise PathNotAllowed(str(exc)) from None

    def _mount_folder(self, path, seal):
        try:
            return atomic.mount_folder(path, seal)
        except PermissionError as exc:
            raise PathNotAllowed(str(exc)) from None
        except atomic.SealFailed as exc:
            raise CommandFailed(["mount_folder", path], 5, str(exc)) from None

    def _module_parameter(self, module, name, value):
        argv = ["module_parameter", module, name, value]
        try:
            return atomic.module_parameter(module, name, value)
        except PermissionError as exc:
            raise PathNotAllowed(str(exc)) from None
        except FileNotFoundError as exc:
            raise UnknownParameter(argv, 4, str(exc)) from None
        except OSError as exc:
            raise CommandFailed(argv, 5, f"{name}={value}: {exc.strerror}") from None


_KEY_TYPES = ("ssh-ed25519", "ssh-rsa", "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384", "ecdsa-sha2-nistp521")


def _is_public_key(key_type: str, blob: str) -> bool:
    """The base64 blob decodes to an SSH key whose embedded type is key_type."""
    try:
        raw = base64.b64decode(blob, validate=True)
    except ValueError:
        return False
    n = int.from_bytes(raw[:4], "big")
    return raw[4 : 4 + n] == key_type.encode()


def parse_host_keys(text: str) -> list[str]:
    """'type base64' pairs from ssh-keyscan output or pasted known_hosts lines; ValueError if none."""
    keys = []
    for line in text.strip().splitlines():
        parts = line.split()
        if not parts or parts[0].startswith("#"):
            continue
        if parts[0] not in _KEY_TYPES:
            parts = parts[1:]  # drop the known_hosts host pattern
        if len(parts) < 2 or parts[0] not in _KEY_TYPES or not _is_public_key(parts[0], parts[1]):
            raise ValueError("not an SSH public host key (expected e.g. 'ssh-ed25519 AAAA…')")
        keys.append(f"{parts[0]} {parts[1]}")
    if not keys:
        raise ValueError("no SSH host key given")
    return keys


def _control_dir() -> str:
    """A short private directory for ssh's shared-connection sockets (socket paths max 108 bytes); TARN_SSH_CONTROL_DIR
    gives another (two Tarns on one machine, as the test lanes are, each closing only its own connections)."""
    path = os.environ.get("TARN_SSH_CONTROL_DIR") or f"/tmp/tarn-ssh-{os.getuid()}"
    if not os.path.isabs(path) or len(path) > 60:  # a socket's name adds 33 bytes, ssh's temporary one 17 more
        raise HostUnreachable(f"TARN_SSH_CONTROL_DIR must be an absolute path of at most 60 characters: {path!r}")
    os.makedirs(path, mode=0o700, exist_ok=True)
    info = os.lstat(path)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        raise HostUnreachable(f"{path} is not a private directory of this user; refusing to use it")
    return path


class _FirstConnection:
    """While no shared connection to a host is up, the first command to it makes it alone and the commands started
    meanwhile wait for it, then share it, instead of each making a connection of its own: an inventory read starts
    three commands at once, and an SSH handshake costs ~1 s of CPU on the emulated lab's NAS. The wait ends when
    the master's socket appears (after authentication), or when the first command ends, whatever became of it
    (then each goes on as before: one failed connection never queues the others behind it)."""

    def __init__(self, control_path: str, wait: float):
        self.control_path = control_path
        self._fd: int | None = None
        if os.path.exists(control_path):
            return
        fd = os.open(f"{control_path}.lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:  # another command is making the connection: wait for it, then go
            deadline = time.monotonic() + wait
            while not os.path.exists(control_path) and time.monotonic() < deadline:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    time.sleep(0.02)
            os.close(fd)
            return
        self._fd = fd  # the first: hold the lock until the socket is there

    def watch(self) -> None:
        if self._fd is not None and os.path.exists(self.control_path):
            self.release()

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # drops the lock
            self._fd = None


def _ssh_base(address: str, port: int) -> str:
    return address if port == 22 else f"[{address}]:{port}"


def ssh_keyscan(address: str, port: int, *, timeout: float = 8.0) -> list[str]:
    """The host keys a server presents now (to pin them when the host is added)."""
    env = {"LC_ALL": "C", "PATH": SAFE_PATH}
    argv = ["ssh-keyscan", "-T", str(int(timeout)), "-p", str(int(port)), "-t", "ed25519,ecdsa,rsa", "--", address]
    rc, out, err, _ = _spawn(argv, timeout=timeout + 5, input=None, env=env)
    try:
        return parse_host_keys(out)
    except ValueError:
        raise HostUnreachable(f"no SSH server answered at {address}:{port}") from None


@dataclass
class SSHTransport(Transport):
    """Commands on a remote host through the ssh client: key auth, pinned host key, shared connection."""

    address: str = ""
    port: int = 22
    user: str = "root"
    identity_file: str = ""
    host_keys: Sequence[str] = ()
    state_dir: str = "/tmp"
    connect_timeout: int = 8
    _known_hosts: Path | None = field(default=None, init=False, repr=False)

    @property
    def privileged(self) -> bool:
        return self.user == "root"

    def _control_path(self) -> str:
        """One shared connection per destination *and* pinned keys: a changed pin never reuses a master."""
        ident = "\0".join([self.user, self.address, str(self.port), self.identity_file, *self.host_keys])
        return f"{_control_dir()}/{hashlib.sha256(ident.encode()).hexdigest()[:32]}"

    def _ssh_argv(self, remote_argv: list[str], env: dict[str, str] | None = None) -> list[str]:
        if self._known_hosts is None:
            Path(self.state_dir).mkdir(parents=True, exist_ok=True, mode=0o700)
            known = Path(self.state_dir) / f"known_hosts-{self.address}-{self.port}"
            known.write_text("".join(f"{_ssh_base(self.address, self.port)} {k}\n" for k in self.host_keys))
            self._known_hosts = known
        # ssh hands its command to the remote shell: quote every argument so it arrives unchanged. The environment
        # is the shell's prefix assignment (POSIX; the command is looked up in that PATH), not `env`: one exec fewer
        # per command, a quarter of a trivial command's cost on a slow host (305 -> 231 ms in the emulated lab).
        extra = "".join(f"{k}={v} " for k, v in (env or {}).items())  # names and values checked by run()
        command = f"LC_ALL=C LANG=C PATH={SAFE_PATH} {extra}{shlex.join(remote_argv)}"
        return [
            "ssh",
            "-F",
            "/dev/null",
            "-o",
            "BatchMode=yes",
            "-o",
            "StrictHostKeyChecking=yes",
            "-o",
            f"UserKnownHostsFile={self._known_hosts}",
            "-o",
            "GlobalKnownHostsFile=/dev/null",
            "-o",
            f"ConnectTimeout={int(self.connect_timeout)}",
            "-o",
            "ServerAliveInterval=15",
            "-o",
            "ControlMaster=auto",
            "-o",
            f"ControlPath={self._control_path()}",
            "-o",
            "ControlPersist=300",
            "-o",
            "IdentitiesOnly=yes",
            "-i",
            self.identity_file,
            *self._destination(),
            command,
        ]

    def _destination(self) -> list[str]:
        return ["-p", str(int(self.port)), "-l", self.user, "--", self.address]

    def _kept_key(self):
        return self._control_path()

    def _converse(self, argv):
        """Over the shared connection only (none yet: None, and the usual way makes it); never as its master (a
        master outlives the conversation, holding its pipes)."""
        if not os.path.exists(self._control_path()):
            return None
        ssh = self._ssh_argv(["timeout", "-k", "5", str(KEPT_LIFETIME), *argv])
        ssh[ssh.index("ControlMaster=auto")] = "ControlMaster=no"
        return _start_conversation(ssh, {"LC_ALL": "C", "PATH": SAFE_PATH, "HOME": os.environ.get("HOME", "/root")})

    def _execute(self, argv, *, timeout, input, mutating, max_output=DEFAULT_MAX_OUTPUT, env=None):
        remote_env, env = env, {"LC_ALL": "C", "PATH": SAFE_PATH, "HOME": os.environ.get("HOME", "/root")}
        # Killing the local ssh client does not stop the remote command: coreutils timeout does.
        remote = ["timeout", "-k", "5", f"{timeout:g}", *argv]
        for attempt in range(4):
            first = _FirstConnection(self._control_path(), wait=self.connect_timeout + 2)
            try:
                rc, out, err, duration = _spawn(
                    self._ssh_argv(remote, remote_env),
                    timeout=timeout + 2,
                    input=input,
                    env=env,
                    max_output=max_output,
                    watch=first.watch,
                )
            finally:
                first.release()
            if not retry_after_mux_failure(rc, err, mutating=mutating):
                break
            time.sleep(0.5 * (attempt + 1))  # let the dying master exit, then connect afresh
        if rc == 124 and argv[0] != "timeout":
            raise CommandTimeout(argv, timeout)
        if rc == 255:
            if "host key verification failed" in err.lower() or "remote host identification has changed" in err.lower():
                raise HostKeyMismatch(
                    f"{self.address}:{self.port} presented a different host key than the one pinned; refusing to connect"
                )
            if not err.strip() or "ssh:" in err or "Permission denied" in err or "Connection" in err:
                raise HostUnreachable(
                    f"cannot reach {self.address}:{self.port}: "
                    f"{err.strip().splitlines()[-1] if err.strip() else 'ssh failed'}"
                )
        return CommandResult(argv, rc, out, err, duration, mutating)

    def _folder(self, path, owner, group, mode, create):
        argv = python(
            "-c",
            inspect.getsource(atomic),
            "--folder",
            path,
            owner,
            group,
            format(mode, "o"),
            "1" if create else "0",
        )
        result = self._execute(argv, timeout=60, input=None, mutating=True)
        if result.returncode == 3:
            raise PathNotAllowed(result.stderr.strip())
        if result.returncode != 0:
            raise error_for(["folder", path], result.returncode, result.stderr)
        return result.stdout.strip()

    def _scratch(self, path, create, tag):
        argv = python("-c", inspect.getsource(atomic), "--scratch", path, "create" if create else "remove")
        argv += [tag] if tag else []
        result = self._execute(argv, timeout=600, input=None, mutating=True)
        if result.returncode == 3:
            raise PathNotAllowed(result.stderr.strip())
        if result.returncode != 0:
            raise error_for(["scratch", path], result.returncode, result.stderr)
        return result.stdout.strip()

    def _mount_folder(self, path, seal):
        argv = python("-c", inspect.getsource(atomic), "--mount-folder", path, "seal" if seal else "check")
        result = self._execute(argv, timeout=30, input=None, mutating=seal)
        if result.returncode == 3:
            raise PathNotAllowed(result.stderr.strip())
        if result.returncode != 0:
            raise error_for(["mount_folder", path], result.returncode, result.stderr)
        return result.stdout.strip()

    def _module_parameter(self, module, name, value):
        argv = python("-c", inspect.getsource(atomic), "--module-parameter", module, name, value)
        result = self._execute(argv, timeout=30, input=None, mutating=True)
        short = ["module_parameter", module, name, value]
        if result.returncode == 3:
            raise PathNotAllowed(result.stderr.strip())
        if result.returncode == 4:
            raise UnknownParameter(short, 4, result.stderr)
        if result.returncode != 0:
            raise CommandFailed(short, result.returncode, f"{name}={value}: {last_line(result.stderr)}")
        return result.stdout.strip()

    def _remove(self, path, timeout):
        argv = python("-c", inspect.getsource(atomic), "--remove", path, *self.writable_dirs)
        result = self._execute(argv, timeout=timeout, input=None, mutating=True)
        if result.returncode == 3:
            raise PathNotAllowed(result.stderr.strip())
        if result.returncode != 0:
            raise error_for(["remove_file", path], result.returncode, result.stderr)
        return result.stdout.strip() == "removed"

    def _write(self, path, data, mode, timeout, group=""):
        script = inspect.getsource(atomic)
        argv = python("-c", script, path, format(mode, "o") + (f":{group}" if group else ""), *self.writable_dirs)
        # The data travels on stdin as bytes (config files, and sealed backups, which are not text).
        result = self._execute(argv, timeout=timeout, input=data, mutating=True)
        if result.returncode == 3:
            raise PathNotAllowed(result.stderr.strip())
        if result.returncode != 0:
            raise error_for(["write_file", path], result.returncode, result.stderr)
        return result.stdout.strip() == "changed"

    def close(self):
        """Stop the shared connection (tests and host removal)."""
        argv = ["ssh", "-o", f"ControlPath={self._control_path()}", "-O", "exit", *self._destination()]
        try:
            _spawn(argv, timeout=5, input=None, env={"PATH": SAFE_PATH})
        except CommandTimeout:
            pass
