"""Transient systemd timers: work armed on the host itself, so it happens even when Tarn's worker, Tarn, or the
link to the host is gone (the rollback of a network change that was not kept)."""

import re

from hostlib.runner import Transport

UNIT = re.compile(r"^tarn-[a-z]+-[0-9]{1,12}(-[0-9]{1,12})?$")  # tarn-restore-<change>[-<re-armed at>]


def _unit(name: str) -> str:
    if not UNIT.fullmatch(name):
        raise ValueError(f"not a Tarn unit name: {name[:60]!r}")
    return name


def arm(t: Transport, unit: str, seconds: int, argv: list[str], *, description: str, log: str) -> None:
    """Run argv once, `seconds` from now, as the transient unit `unit` (its output appended to log)."""
    t.run(
        [
            "systemd-run",
            f"--unit={_unit(unit)}",
            f"--on-active={int(seconds)}",
            "--timer-property=AccuracySec=100ms",
            f"--description={description}",
            f"--property=StandardOutput=append:{log}",
            f"--property=StandardError=append:{log}",
            "--",
            *argv,
        ],
        mutating=True,
        timeout=30,
    )


def disarm(t: Transport, unit: str) -> bool:
    """Stop the timer before it fires: True if it was still waiting, False if it is gone (it fired already)."""
    result = t.run(["systemctl", "stop", "--", f"{_unit(unit)}.timer"], mutating=True, check=False, timeout=30)
    return result.returncode == 0


def armed(t: Transport, unit: str) -> bool:
    """Is the timer still waiting? (A transient timer is unloaded once its service has run.)"""
    argv = ["systemctl", "show", "-p", "ActiveState", "--value", "--", f"{_unit(unit)}.timer"]
    return t.run(argv, check=False, timeout=30).stdout.strip() == "active"


def stop(t: Transport, unit: str) -> None:
    """Stop a transient service if it still runs (a one-shot server whose client never came)."""
    t.run(["systemctl", "stop", "--", f"{_unit(unit)}.service"], mutating=True, check=False, timeout=30)


# A root process that only reads and writes its own folders (fio): no devices (a link planted as /dev/sdX finds
# nothing), the whole file system read-only but those folders, no privilege to gain, no kernel knob to turn.
SANDBOX = (
    "PrivateDevices=yes",
    "DevicePolicy=closed",
    "ProtectSystem=strict",
    "ProtectHome=yes",
    "PrivateTmp=yes",
    "NoNewPrivileges=yes",
    "RestrictSUIDSGID=yes",
    "ProtectKernelTunables=yes",
    "ProtectKernelModules=yes",
    "ProtectControlGroups=yes",
)


def start(
    t: Transport,
    unit: str,
    argv: list[str],
    *,
    description: str,
    writable: tuple[str, ...] = (),
    env: dict[str, str] | None = None,
    log: str = "",
    keep: bool = False,
    properties: tuple[str, ...] = (),
) -> None:
    """Run argv now as the transient service `unit`, detached from Tarn: it outlives a worker or an SSH link. Not
    collected on failure, so service_state can tell a failure from a success (reset_failed cleans it up). With
    writable folders it runs in SANDBOX, those folders the only ones it may write. env: its environment's
    additions; log: a new file its output goes to; keep: it stays loaded once done (RemainAfterExit), its result
    readable until it is stopped. properties: more of the unit's own (PROPERTY=value, from Tarn's code).
    argv must hold nothing a user chose: systemd expands $VAR and % specifiers in a unit's command line."""
    extra = [f"--property={p}" for p in properties if re.fullmatch(r"[A-Za-z]+=[A-Za-z0-9_.:/ =-]+", p)]
    if writable:
        paths = " ".join(_folder(p) for p in writable)
        extra += [f"--property={p}" for p in SANDBOX] + [f"--property=ReadWritePaths={paths}"]
    for name, value in (env or {}).items():
        if not re.fullmatch(r"[A-Z_][A-Z0-9_]{0,40}", name) or not re.fullmatch(r"[A-Za-z0-9_.:/=-]{0,200}", value):
            raise ValueError(f"not an environment variable for a unit: {name[:40]!r}")
        extra.append(f"--setenv={name}={value}")
    if log:
        extra += [f"--property=StandardOutput=truncate:{_file(log)}", f"--property=StandardError=append:{_file(log)}"]
    if keep:
        extra.append("--property=RemainAfterExit=yes")
    t.run(
        ["systemd-run", f"--unit={_unit(unit)}", f"--description={description}", *extra, "--", *argv],
        mutating=True,
        timeout=30,
    )


def _file(path: str) -> str:
    if not re.fullmatch(r"/var/log/tarn-[a-z]+-[0-9]{1,12}(-[0-9]{1,12})?\.log", path):
        raise ValueError(f"not a Tarn log file: {path[:80]!r}")
    return path


def _folder(path: str) -> str:
    if not re.fullmatch(r"/[A-Za-z0-9_.+/-]+", path) or "/../" in f"{path}/":
        raise ValueError(f"not a folder for a sandbox: {path[:80]!r}")
    return path


def show(t: Transport, unit: str, *properties: str) -> dict[str, str] | None:
    """The properties of one of Tarn's services as `systemctl show` gives them; None when systemctl said nothing
    (ask again)."""
    argv = ["systemctl", "show", *(a for p in properties for a in ("-p", p)), "--", f"{_unit(unit)}.service"]
    done = t.run(argv, check=False, timeout=30)
    return dict(line.partition("=")[::2] for line in done.stdout.splitlines()) if done.returncode == 0 else None


def service_state(t: Transport, unit: str) -> tuple[str, str]:
    """(ActiveState, Result) of a transient service; ("inactive", "") once it is gone (collected)."""
    values = show(t, unit, "ActiveState", "Result") or {}
    return values.get("ActiveState", "inactive"), values.get("Result", "")


def reset_failed(t: Transport, unit: str) -> None:
    t.run(["systemctl", "reset-failed", "--", f"{_unit(unit)}.service"], mutating=True, check=False, timeout=30)
