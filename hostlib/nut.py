"""A UPS through Network UPS Tools (Debian's nut-server and nut-client, 2.8): Tarn renders NUT's files from one
description, writes them (root's, group nut where its daemons read them), and restarts what reads them; it reads the
UPS's state with `upsc`.

- A UPS plugged into this NAS (`local`): its driver and port in ups.conf, upsd serving it (to this NAS, and to the
  other NAS on the same UPS when `listen` is given: they are its secondaries), upsmon watching it as the primary.
- A UPS another NAS serves (`netclient`): upsmon watching it there as a secondary (a secondary shuts down first: on
  the primary's FSD, or at low battery after HOSTSYNC).
- The shutdown policy: at low battery (the UPS's own LB), at a runtime floor (ignorelb + override.battery.runtime.low:
  the driver raises LB itself below it), or after N seconds on battery (upssched's timer, which asks upsmon for FSD).
- SHUTDOWNCMD is Tarn's program (hostlib/ups_shutdown_helper.py, installed beside the others): it stops the shares,
  exports the pools, then powers off.

UPS names: letters, digits, '_' and '-' (a space makes upsdrvctl skip the section silently; '.', '@' and ':' clash
with NUT's ups@host:port), never "default"."""

import re
from dataclasses import dataclass

from hostlib import runner, ups_shutdown_helper, upssched_helper
from hostlib.configfiles import install_sources
from hostlib.errors import InvalidField, NotFound, ToolMissing
from hostlib.runner import Transport

NUT = "/etc/nut"
FILES = ("nut.conf", "ups.conf", "upsd.conf", "upsd.users", "upsmon.conf", "upssched.conf")
SHUTDOWN = "/usr/local/lib/tarn/tarn-ups-shutdown"
SCHED_CMD = "/usr/local/lib/tarn/tarn-upssched"
POLICIES = ("low_battery", "runtime", "after_seconds")
DRIVERS = ("usbhid-ups", "blazer_usb", "nutdrv_qx", "apcsmart", "snmp-ups", "dummy-ups")
_NAME = re.compile(r"[A-Za-z0-9_-]{1,32}")
_PORT = re.compile(r"[A-Za-z0-9_./:-]{1,128}")
_HOST = re.compile(r"[A-Za-z0-9_.:-]{1,253}")
_SECRET = re.compile(r"[A-Za-z0-9_-]{16,64}")  # Tarn makes the monitor users' passwords itself
STATUS_WORDS = {
    "OL": "on line", "OB": "on battery", "LB": "low battery", "RB": "replace battery", "CHRG": "charging",
    "DISCHRG": "discharging", "BYPASS": "on bypass", "CAL": "calibrating", "OFF": "off", "OVER": "overloaded",
    "TRIM": "trimming", "BOOST": "boosting", "FSD": "forced shutdown", "ALARM": "alarm",
}  # fmt: skip


class InvalidUps(InvalidField):
    """A UPS value NUT (or Tarn) would refuse; field says which."""


def ups_name(value: str, field: str = "name") -> str:
    if not _NAME.fullmatch(value or "") or value.lower() == "default":
        raise InvalidUps(field, "A UPS name is 1-32 letters, digits, '_' or '-' (no spaces or dots), not 'default'")
    return value


@dataclass(frozen=True)
class Ups:
    """One NAS's side of a UPS. mode local: driver and port; listen: the addresses other NAS reach upsd on ('' for
    this NAS alone), secondaries: their monitor user's password. mode netclient: server (host[:port]) and the
    password of the secondary user the primary made."""

    name: str
    mode: str  # local or netclient
    password: str  # this NAS's monitor user's (upsd.users on a primary; the primary's secondary user on a client)
    driver: str = ""
    port: str = ""
    server: str = ""
    listen: tuple[str, ...] = ()
    secondary_password: str = ""  # a primary's: the user other NAS log in with ('' when it serves only itself)
    policy: str = "low_battery"
    seconds: int = 0  # after_seconds: on battery this long; runtime: the floor in seconds
    sim: str = ""  # dummy-ups only: the state file it replays (under /etc/nut)

    def check(self) -> None:
        ups_name(self.name)
        if self.mode not in ("local", "netclient"):
            raise InvalidUps("mode", "A UPS is plugged into this NAS (local) or served by another (netclient)")
        if not _SECRET.fullmatch(self.password):
            raise InvalidUps("password", "Tarn's monitor password is 16-64 letters, digits, '_' or '-'")
        if self.mode == "local":
            if self.driver not in DRIVERS:
                raise InvalidUps("driver", f"A driver NUT ships: {', '.join(DRIVERS)}")
            if not _PORT.fullmatch(self.port):
                raise InvalidUps("port", "A port is 'auto', a device (/dev/ttyS0) or an address, without spaces")
            for address in self.listen:
                if not _HOST.fullmatch(address):
                    raise InvalidUps("listen", f"{address!r} is not an address upsd can listen on")
            if self.secondary_password and not _SECRET.fullmatch(self.secondary_password):
                raise InvalidUps("secondary_password", "The secondaries' password is 16-64 letters, digits, _ or -")
        elif not _HOST.fullmatch(self.server):
            raise InvalidUps("server", "The NAS serving the UPS: its address or name, and :port if not 3493")
        if self.policy not in POLICIES:
            raise InvalidUps("policy", "Shut down at low battery, at a runtime floor, or after N seconds on battery")
        if self.policy != "low_battery" and not 30 <= int(self.seconds) <= 86400:
            raise InvalidUps("seconds", "Between 30 seconds and a day")


def render(ups: Ups) -> dict[str, str]:
    """NUT's files for this NAS's side: {file name under /etc/nut: text}."""
    ups.check()
    local = ups.mode == "local"
    files = {"nut.conf": f"MODE={'netserver' if local and ups.listen else 'standalone' if local else 'netclient'}\n"}
    where = f"{ups.name}@localhost" if local else f"{ups.name}@{ups.server}"
    if local:
        section = [f"[{ups.name}]", f"  driver = {ups.driver}", f"  port = {ups.sim or ups.port}"]
        if ups.policy == "runtime":  # the driver raises LB itself when the runtime falls below the floor
            section += ["  ignorelb", f"  override.battery.runtime.low = {int(ups.seconds)}"]
        files["ups.conf"] = "\n".join(["maxretry = 3", *section]) + "\n"
        files["upsd.conf"] = "".join(f"LISTEN {a} 3493\n" for a in ("127.0.0.1", *ups.listen))
        users = [f"[tarn-primary]\n  password = {ups.password}\n  upsmon primary\n"]
        if ups.secondary_password:
            users.append(f"[tarn-secondary]\n  password = {ups.secondary_password}\n  upsmon secondary\n")
        files["upsd.users"] = "".join(users)
    user, role = ("tarn-primary", "primary") if local else ("tarn-secondary", "secondary")
    monitor = [
        "RUN_AS_USER nut",
        f"MONITOR {where} 1 {user} {ups.password} {role}",
        "MINSUPPLIES 1",
        f'SHUTDOWNCMD "{SHUTDOWN}"',
        "POLLFREQ 5",
        "POLLFREQALERT 2",
        "DEADTIME 15",
        "HOSTSYNC 15",
        "FINALDELAY 5",
    ]
    if local:
        monitor.append("POWERDOWNFLAG /etc/killpower")  # the primary alone asks the UPS to cut its power at the end
    if ups.policy == "after_seconds":
        monitor += [
            "NOTIFYCMD /sbin/upssched",
            "NOTIFYFLAG ONBATT SYSLOG+WALL+EXEC",
            "NOTIFYFLAG ONLINE SYSLOG+WALL+EXEC",
        ]
        files["upssched.conf"] = (
            f"CMDSCRIPT {SCHED_CMD}\nPIPEFN /run/nut/upssched.pipe\nLOCKFN /run/nut/upssched.lock\n"
            f"AT ONBATT * START-TIMER onbatt {int(ups.seconds)}\nAT ONLINE * CANCEL-TIMER onbatt\n"
        )
    files["upsmon.conf"] = "\n".join(monitor) + "\n"
    return files


@dataclass(frozen=True)
class Reading:
    status: list[str]  # NUT's words: OL, OB, LB, RB…
    charge: float | None  # %
    runtime: float | None  # seconds
    load: float | None  # %
    values: dict

    @property
    def shown(self) -> str:
        return ", ".join(STATUS_WORDS.get(w, w) for w in self.status) or "unknown"


def parse_upsc(text: str) -> Reading:
    """`upsc ups@host`: `name: value` lines."""
    values = {}
    for line in text.splitlines():
        key, sep, value = line.partition(": ")
        if sep and re.fullmatch(r"[a-z0-9_.]{1,64}", key):
            values[key] = value.strip()[:200]

    def number(key):
        try:
            return float(values[key])
        except (KeyError, ValueError):
            return None

    status = [w for w in values.get("ups.status", "").split() if re.fullmatch(r"[A-Z]{1,10}", w)]
    return Reading(status, number("battery.charge"), number("battery.runtime"), number("ups.load"), values)


# What reads which file: a change restarts only those (ups.conf: the drivers and upsd; upsd.*: upsd; upsmon.conf and
# upssched.conf: upsmon).
UNITS_LOCAL = ("nut-driver-enumerator.service", "nut-driver.target", "nut-server.service", "nut-monitor.service")
UNITS_CLIENT = ("nut-monitor.service",)
ENABLED = ("nut.target", "nut-driver-enumerator.path")


def apply(t: Transport, ups: Ups) -> list[str]:
    """NUT's files written (root's, group nut, 0640), Tarn's two programs installed, the units enabled and those
    that read a changed file restarted; the files this side does not use removed. NUT missing: ToolMissing.
    Returns the files that changed."""
    files = render(ups)
    missing = runner.tools_missing(t, ("upsc", "upsmon"))
    if missing:
        raise ToolMissing(["nut"], 127, f"NUT is not installed ({', '.join(missing)} missing): apt install nut-server")
    install_sources(t, {SHUTDOWN: ups_shutdown_helper, SCHED_CMD: upssched_helper})
    changed = [name for name, text in files.items() if t.write_file(f"{NUT}/{name}", text, mode=0o640, group="nut")]
    for name in FILES:
        if name not in files and name != "nut.conf" and t.remove_file(f"{NUT}/{name}"):
            changed.append(name)
    units = UNITS_LOCAL if ups.mode == "local" else UNITS_CLIENT
    if changed:
        # (a unit without an [Install] section is only warned about: the restart below is what must work)
        t.run(["systemctl", "enable", "--", *ENABLED, *units], mutating=True, check=False, timeout=60)
        t.run(["systemctl", "restart", "--", *units], mutating=True, timeout=120)
    return changed


def read(t: Transport, name: str, server: str = "") -> Reading:
    """The UPS's state now, as upsd serves it: this NAS's (server ''), or the one at server. A UPS upsd does not
    know, or whose driver lost it (unplugged): NotFound with NUT's words."""
    where = f"{ups_name(name)}@{server or 'localhost'}"
    done = t.run(["upsc", "--", where], check=False, timeout=30)
    if done.returncode != 0:
        said = [line for line in done.stderr.splitlines() if line.startswith("Error:")]
        raise NotFound(["upsc", where], done.returncode, (said or [done.stderr.strip() or "no answer"])[-1])
    return parse_upsc(done.stdout)


def disable(t: Transport) -> bool:
    """NUT off on this NAS: MODE=none (its daemons refuse to start), its units stopped and disabled. True if it
    was on."""
    changed = t.write_file(f"{NUT}/nut.conf", "MODE=none\n", mode=0o640, group="nut")
    t.run(["systemctl", "disable", "--now", "--", *ENABLED, *UNITS_LOCAL], mutating=True, check=False, timeout=120)
    return changed
