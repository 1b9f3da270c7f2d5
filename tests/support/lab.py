"""Drive the QEMU lab guest from tests: bring it up, reset it, reach it with Tarn's own SSH transport."""

import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from hostlib.runner import CommandTimeout, HostUnreachable, SSHTransport, _control_dir

ROOT = Path(__file__).resolve().parents[2]
LAB_SH = ROOT / "lab" / "lab.sh"


@dataclass(frozen=True)
class Lab:
    env: dict

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

    def add_host(self):
        """The guest as Tarn's Host "lab", over the SSH transport with its pinned host key."""
        from appliance.models import Host  # noqa: PLC0415 - scripts (make perf, make fixtures) import this module before Django is set up

        return Host.objects.create(
            name="lab",
            transport="ssh",
            address=self.env["LAB_SSH_HOST"],
            port=self.ssh_port,
            identity_file=self.env["LAB_SSH_KEY"],
            host_keys=self.env["LAB_HOST_KEY"],
        )

    def lab_sh(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
        """lab/lab.sh, its guest commands riding Tarn's shared connection to the guest when one is up (the same
        root login with the same key: a handshake costs the emulated guest ~1.5 s of CPU)."""
        control = self.transport()._control_path()
        env = {**os.environ, "LAB_CONTROL_PATH": control}
        return subprocess.run([str(LAB_SH), *args], capture_output=True, text=True, timeout=timeout, env=env)

    def sh(self, command: str, timeout: float = 120) -> str:
        """Set-up and inspection in the guest that is not Tarn's to do (a shell is fine here: test harness)."""
        result = self.lab_sh("ssh", command, timeout=timeout)
        if result.returncode != 0:
            raise AssertionError(f"guest command failed ({result.returncode}): {command}\n{result.stderr}")
        return result.stdout

    def ns(self, *argv: str, timeout: float = 60, check=True) -> subprocess.CompletedProcess:
        """Run argv in this machine's side of the data link (the lab's network namespace)."""
        return subprocess.run(
            ["ip", "netns", "exec", self.netns, *argv], capture_output=True, text=True, timeout=timeout, check=check
        )

    def reboot(self, timeout: float = 240) -> float:
        """Reboot the guest for real and wait until it is up again (systemd settled); returns the seconds taken."""
        started = time.monotonic()
        subprocess.run([str(LAB_SH), "ssh", "systemctl reboot"], capture_output=True, timeout=60)
        close_shared_connections()
        time.sleep(5)
        while time.monotonic() - started < timeout:
            probe = subprocess.run(
                [str(LAB_SH), "ssh", "systemctl is-system-running --wait"], capture_output=True, text=True, timeout=120
            )
            if probe.stdout.strip() in ("running", "degraded"):
                close_shared_connections()
                return time.monotonic() - started
            time.sleep(2)
        raise AssertionError(f"the guest did not come back within {timeout:.0f} s of a reboot")

    def reset(self, state: str = "clean") -> float:
        """Back to the clean state (or a saved one); if loadvm cannot bring the guest back, it is started anew
        (clean: the saved states go with it). The one SSH handshake after loadvm is Tarn's own: its first command
        is the probe, and its shared connection then carries the harness's guest commands too."""
        started = time.monotonic()
        close_shared_connections()  # they would point at a guest that no longer knows them
        result = self.lab_sh("reset", state, "--no-ssh", timeout=180)
        if result.returncode != 0 or not self._connect():
            subprocess.run([str(LAB_SH), "down"], capture_output=True, timeout=60)
            lab_up()
            close_shared_connections()
            state = "clean"
        _guest["state"] = state
        return time.monotonic() - started

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

    def enter(self, state: str = "clean", build=None) -> None:
        """Start a test from `state`: restored when saved (~3 s), else made once from clean by build() and saved
        (a pool, users: what several tests start from), so no test pays for making it again."""
        if _guest["state"] == state:
            return  # nothing has touched the guest since it was restored
        if state == "clean" or self.saved(state):
            self.reset(state)
            return
        if _guest["state"] != "clean":
            self.reset()
        build()
        self.lab_sh("save", state).check_returncode()
        _guest["state"] = state

    def saved(self, state: str) -> bool:
        return (Path(self.env["LAB_RUN"]) / "states" / state).exists()

    def touched(self) -> None:
        """A test has had the guest: the next one restores whatever state it starts from."""
        _guest["state"] = None


# The state the running guest is in, as far as this test session knows: "clean", a saved one's name, or None once
# a test has had it.
_guest: dict = {"state": None}


def close_shared_connections() -> None:
    """Stop ssh's shared-connection masters: after a restore their TCP connection points at a guest that no longer
    knows it. Tarn retries a command that meets a dying master (proven in test_runner_ssh.py); closing them here
    keeps lab tests from racing that death at all."""
    for sock in Path(_control_dir()).iterdir():
        if sock.is_socket():
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


def lab_running() -> bool:
    return subprocess.run([str(LAB_SH), "status"], capture_output=True, timeout=60).returncode == 0


def lab_down() -> None:
    subprocess.run([str(LAB_SH), "down"], capture_output=True, timeout=60, check=True)


def lab_up(timeout: float = 1800) -> Lab:
    result = subprocess.run([str(LAB_SH), "up"], capture_output=True, text=True, timeout=timeout)
    if result.returncode != 0:
        raise RuntimeError(f"lab/lab.sh up failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
    return read_lab()


def read_lab() -> Lab:
    run = Path(os.environ.get("TARN_LAB_RUN", "/run/tarn-lab"))
    env = {}
    for line in (run / "lab.env").read_text().splitlines():
        key, _, value = line.partition("=")
        env[key] = value
    return Lab(env)
