"""Typed errors raised by the host boundary; `str(error)` is safe to show to an admin."""

import re


class HostError(Exception):
    """Base class: something on a host did not go as asked."""


class InvalidField(HostError, ValueError):
    """A value the host library refuses (Tarn's rules, or what only the host can tell), naming the field it came
    from: a page or API shows it under that field (appliance.checks.checked), an operation as its message."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field


class ToolNotAllowed(HostError):
    """argv[0] is not on the allowlist."""


class ReadOnlyHost(HostError):
    """A mutating command was asked of a read-only host (plan / dry run)."""


class HostUnreachable(HostError):
    """The SSH connection could not be made."""


class HostKeyMismatch(HostUnreachable):
    """The host presented a key other than the one pinned when it was added."""


class PathNotAllowed(HostError):
    """A file write outside the allowed directories, or through a symlink."""


class CommandTimeout(HostError):
    def __init__(self, argv, timeout):
        self.argv, self.timeout = list(argv), timeout
        super().__init__(f"{argv[0]} did not finish within {timeout:g} s and was stopped")


class OutputTooLarge(HostError):
    """A command printed more than Tarn reads from one call; it was stopped."""

    def __init__(self, argv, limit):
        self.argv, self.limit = list(argv), limit
        super().__init__(f"{argv[0]} printed more than {limit >> 20} MiB and was stopped")


class CommandFailed(HostError):
    """A command exited non-zero; the message is the tool's own last stderr line."""

    def __init__(self, argv, returncode, stderr):
        self.argv, self.returncode, self.stderr = list(argv), returncode, stderr
        detail = last_line(stderr) or f"exit status {returncode}"
        super().__init__(f"{argv[0]}: {detail}")


class ConversationEnded(CommandFailed):
    """A program kept on a host for several questions (hostlib.runner.Conversation) was gone before it answered one:
    its idle time ran out as it was asked, or it failed; the question is asked once more the usual way."""

    def __init__(self, argv, stderr=""):
        super().__init__(argv, -1, stderr)


class NotFound(CommandFailed):
    pass


class AlreadyExists(CommandFailed):
    pass


class UnknownParameter(NotFound):
    """A kernel tunable (sysctl or module parameter) that does not exist on this host."""


class ToolMissing(NotFound):
    """The tool is not installed on that host (exit status 127: the shell's, or coreutils timeout's over SSH)."""

    def __init__(self, argv, returncode, stderr):
        super().__init__(argv, returncode, stderr)
        self.args = (f"{argv[0]} is not installed on this host",)


class Busy(CommandFailed):
    pass


class PermissionDenied(CommandFailed):
    pass


_PATTERNS = [
    (re.compile(r"already exists", re.I), AlreadyExists),
    (re.compile(r"\bbusy\b", re.I), Busy),
    (re.compile(r"permission denied|operation not permitted", re.I), PermissionDenied),
    (re.compile(r"no such (pool|dataset|file|device)|does not exist|not found", re.I), NotFound),
]


def last_line(text: str, limit: int = 500) -> str:
    """The last line a tool printed, printable characters only (what a host says is shown on a page)."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return "".join(c for c in lines[-1] if c.isprintable())[:limit] if lines else ""


def error_for(argv, returncode, stderr) -> CommandFailed:
    """The most specific CommandFailed subclass whose pattern matches stderr."""
    if returncode == 127 and re.search(r"command not found|failed to run command", stderr):
        return ToolMissing(argv, returncode, stderr)
    for pattern, cls in _PATTERNS:
        if pattern.search(stderr):
            return cls(argv, returncode, stderr)
    return CommandFailed(argv, returncode, stderr)
