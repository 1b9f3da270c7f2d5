"""Drive the QEMU lab guest from tests: bring it up, reset it, reach it with Tarn's own SSH transport."""

import os
import shutil
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from hostlib.runner import CommandTimeout, HostUnreachable, SSHTransport, _control_dir

ROOT = Path(__file__).resolve().parents[2]
LAB_SH = ROOT / "lab" / "lab.sh"


BOOT_ID = "/proc/sys/kernel/random/boot_id"  # a new one each boot


@dataclass(frozen=True)
class Lab:
    env: dict  # its lab.env
    overrides: dict = field(default_factory=dict)  # TARN_LAB_* for lab/lab.sh: a second guest's own run dir, ports…

    @property
    def ssh_port(self) -> int:
        return int(self.env["LAB_SSH_PORT"])

    @property
    def netns(self) -> str:
        return self.env["LAB_NETNS"]

    def transport(self, **kwargs) -> SSHTransport:
        """Tarn's own SSH transport to the guest, as a Host would get it."""
        return SSHTransport(
            address=self.env["LAB_SSH_HOST"],
            port=self.ssh_port,
            user="root",
            identity_file=self.env["LAB_SSH_KEY"],
            host_keys=[self.env["LAB_HOST_KEY"]],
            state_dir=str(Path(self.env["LAB_RUN"]) / "tarn-ssh"),
            **kwargs,
        )

    def add_host(self, name: str = "lab"):
        """The guest as a Tarn Host, over the SSH transport with its pinned host key."""
        from appliance.models import Host  # noqa: PLC0415 - scripts (make perf, make fixtures) import this module before Django is set up

        return Host.objects.create(
            name=name,
            transport="ssh",
            address=self.env["LAB_SSH_HOST"],
            port=self.ssh_port,
            identity_file=self.env["LAB_SSH_KEY"],
            host_keys=self.env["LAB_HOST_KEY"],
        )

    def lab_sh(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
        """lab/lab.sh, its guest commands riding Tarn's shared connection to the guest when one is up (the same
        root login with the same key: a handshake costs the emulated guest ~1.5 s of CPU)."""
        control = self.transport()._control_path()  # unless the overrides name one of their own
        return _lab_sh(*args, overrides={"LAB_CONTROL_PATH": control, **self.overrides}, timeout=timeout)

    def sh(self, command: str, timeout: float = 120) -> str:
        """Set-up and inspection in the guest that is not Tarn's to do (a shell is fine here: test harness)."""
        result = self.lab_sh("ssh", command, timeout=timeout)
        if result.returncode != 0:
            raise AssertionError(f"guest command failed ({result.returncode}): {command}\n{result.stderr}")
        return result.stdout

    def nvme(self, plugged: bool) -> None:
        """The lab's NVMe drive into its PCIe slot or out of it (lab.sh nvme on|off): QEMU cannot save a guest with
        it, so a test that plugs it in takes it out again before the next reset."""
        result = self.lab_sh("nvme", "on" if plugged else "off", timeout=60)
        if result.returncode != 0:
            raise AssertionError(f"lab.sh nvme: {result.stderr}")

    def monitor(self, command: str) -> str:
        """A command to the guest's QEMU monitor (HMP), e.g. `set_link rep0 off` to cut the replication wire."""
        result = subprocess.run(
            ["python3", str(ROOT / "lab" / "hmp.py"), self.env["LAB_MONITOR"], command],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        return result.stdout

    def ns(self, *argv: str, timeout: float = 60, check=True) -> subprocess.CompletedProcess:
        """Run argv in this machine's side of the data link (the lab's network namespace)."""
        return subprocess.run(
            ["ip", "netns", "exec", self.netns, *argv], capture_output=True, text=True, timeout=timeout, check=check
        )

    def reboot(self, timeout: float = 240) -> float:
        """Reboot the guest for real and wait until it is up again (systemd settled); returns the seconds taken."""
        started = time.monotonic()
        booted = self.sh(f"cat {BOOT_ID}").strip()
        self.lab_sh("ssh", "systemctl reboot", timeout=60)
        close_shared_connections(keep=self.others())
        return self.wait_up(started, timeout, not_boot=booted)

    def wait_up(self, started: float, timeout: float = 240, not_boot: str = "") -> float:
        """Wait until the guest is up again after a reboot (systemd settled, and a boot other than not_boot: the old
        one still answering is not the new one); the seconds since started."""
        while time.monotonic() - started < timeout:
            probe = self.lab_sh("ssh", f"cat {BOOT_ID}; systemctl is-system-running --wait")
            boot, _, state = probe.stdout.strip().partition("\n")
            if state.strip() in ("running", "degraded") and boot.strip() != not_boot:
                close_shared_connections(keep=self.others())
                return time.monotonic() - started
            time.sleep(1)
        raise AssertionError(f"the guest did not come back within {timeout:.0f} s of a reboot")

    def set_clock(self, to: float | None = None) -> None:
        """The guest's clock to `to` (seconds since the epoch), or back to this machine's time: for what a clock
        that steps does (snapshots whose creation does not follow the order they were taken in)."""
        self.sh(f"date -s @{time.time() if to is None else to:.3f} >/dev/null")

    def reset(self, state: str = "clean") -> float:
        """Back to the clean state (or a saved one); if loadvm cannot bring the guest back, it is started anew
        (clean: the saved states go with it). The one SSH handshake after loadvm is Tarn's own: its first command
        is the probe, and its shared connection then carries the harness's guest commands too."""
        started = time.monotonic()
        _labs[self.run] = self
        close_shared_connections(keep=self.others())  # they would point at a guest that no longer knows them
        result = self.lab_sh("reset", state, "--no-ssh", timeout=180)
        if result.returncode != 0 or not self._connect():
            lab_down(self.overrides)
            lab_up(overrides=self.overrides)
            close_shared_connections(keep=self.others())
            state = "clean"
        _guests[self.run] = state
        return time.monotonic() - started

    def others(self) -> set[str]:
        """The shared connections to the other running guests (their root's): a restore of this one leaves them up,
        where closing them cost the other guest a handshake (~1.5-2 s of its emulated CPU) at its next command."""
        return {lab.transport()._control_path() for run, lab in _labs.items() if run != self.run}

    def _connect(self, timeout: float = 60) -> bool:
        """Tarn's transport reaches the restored guest (and keeps its shared connection); the guest's clock, which
        stood still since the state was saved, is set to this machine's."""
        deadline = time.monotonic() + timeout
        clock = self.transport(extra_tools=frozenset({"date"}))
        while True:
            try:
                clock.run(["true"], timeout=20)  # the handshake (~2 s): the time is read after it
                return clock.run(["date", "-s", f"@{time.time():.0f}"], timeout=20, mutating=True).returncode == 0
            except (HostUnreachable, CommandTimeout):
                if time.monotonic() > deadline:
                    return False
                time.sleep(0.3)

    def enter(self, state: str = "clean", build=None, base: str = "clean") -> None:
        """Start a test from `state`: restored when saved (~3 s), else made once by build() from `base` (clean, or a
        saved state the caller entered just before) and saved (a pool, users, shares: what several tests start
        from), so no test pays for making it again."""
        if _guests.get(self.run) == state:
            return  # nothing has touched the guest since it was restored
        if state == "clean" or self.saved(state):
            self.reset(state)
            return
        if _guests.get(self.run) != base:
            self.reset(base)
        build()
        self.lab_sh("save", state).check_returncode()
        _guests[self.run] = state

    @property
    def run(self) -> str:
        return self.env["LAB_RUN"]

    def saved(self, state: str) -> bool:
        return (Path(self.run) / "states" / state).exists()

    def touched(self) -> None:
        """A test has had the guest: the next one restores whatever state it starts from."""
        _guests[self.run] = None


def enter_both(first: Lab, second: Lab, state: str, build) -> None:
    """Both guests in a state made across the two (a replication pair): restored when both saved it, else made
    once from clean by build() and saved on each."""
    if first.saved(state) and second.saved(state):
        with ThreadPoolExecutor(2) as both:  # side by side: each its own run dir, monitor and connection
            list(both.map(lambda lab: lab.enter(state), (first, second)))
        return
    first.enter("clean")
    second.enter("clean")
    build()
    for lab in (first, second):
        lab.lab_sh("save", state).check_returncode()
        _guests[lab.run] = state


# The state each running guest (by its run dir) is in, as far as this test session knows: "clean", a saved one's
# name, or None once a test has had it.
_guests: dict[str, str | None] = {}
_labs: dict[str, Lab] = {}  # the guests restored in this session, by run dir


def close_shared_connections(keep: set[str] | frozenset = frozenset()) -> None:
    """Stop ssh's shared-connection masters (but those in keep): after a restore their TCP connection points at a
    guest that no longer knows it. Tarn retries a command that meets a dying master (proven in test_runner_ssh.py);
    closing them here keeps lab tests from racing that death at all."""
    for sock in Path(_control_dir()).iterdir():
        if sock.is_socket() and str(sock) not in keep:
            subprocess.run(
                ["ssh", "-o", f"ControlPath={sock}", "-O", "exit", "lab"], capture_output=True, timeout=10, check=False
            )


def lab_missing_reason() -> str | None:
    for tool in ("qemu-system-x86_64", "qemu-img", "mmdebstrap", "zstd"):
        if not shutil.which(tool):
            return f"{tool} is not installed (make lab installs the lab's packages)"
    if os.geteuid() != 0:
        return "the lab needs root (tap devices, network namespaces, mmdebstrap)"
    return None


def _lab_sh(*args: str, overrides: dict | None, timeout: float) -> subprocess.CompletedProcess:
    env = {**os.environ, **(overrides or {})}
    return subprocess.run([str(LAB_SH), *args], capture_output=True, text=True, timeout=timeout, env=env)


def lab_running(overrides: dict | None = None) -> bool:
    return _lab_sh("status", overrides=overrides, timeout=60).returncode == 0


def lab_down(overrides: dict | None = None) -> None:
    _lab_sh("down", overrides=overrides, timeout=60).check_returncode()


def lab_up(timeout: float = 1800, overrides: dict | None = None) -> Lab:
    result = _lab_sh("up", overrides=overrides, timeout=timeout)
    if result.returncode != 0:
        raise RuntimeError(f"lab/lab.sh up failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
    return read_lab(overrides)


def read_lab(overrides: dict | None = None) -> Lab:
    overrides = overrides or {}
    run = Path(overrides.get("TARN_LAB_RUN") or os.environ.get("TARN_LAB_RUN", "/run/tarn-lab"))
    env = {}
    for line in (run / "lab.env").read_text().splitlines():
        key, _, value = line.partition("=")
        env[key] = value
    return Lab(env, overrides)
