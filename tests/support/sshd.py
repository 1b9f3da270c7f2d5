"""A real sshd on 127.0.0.1 with its own keys and config, for SSH transport tests."""

import os
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Sshd:
    port: int
    client_key: Path
    host_pub: str  # "ssh-ed25519 AAAA…"
    process: subprocess.Popen
    directory: Path

    def stop(self):
        self.process.terminate()
        self.process.wait(5)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def keygen(path: Path) -> None:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True)


def start_sshd(directory: Path, sshd_binary: str) -> Sshd:
    directory.mkdir(parents=True, exist_ok=True)
    os.chmod(directory, 0o700)
    keygen(directory / "host_key")
    keygen(directory / "client_key")
    (directory / "authorized_keys").write_text((directory / "client_key.pub").read_text())
    port = free_port()
    config = directory / "sshd_config"
    config.write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {directory}/host_key\n"
        f"AuthorizedKeysFile {directory}/authorized_keys\nPidFile {directory}/sshd.pid\n"
        "PermitRootLogin prohibit-password\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n"
        "UsePAM no\nStrictModes no\nMaxSessions 50\nMaxStartups 50\nLogLevel ERROR\n"
    )
    Path("/run/sshd").mkdir(exist_ok=True)
    # Its log to a file: a pipe nobody reads fills up over a session's tests, then sshd and every session child
    # block writing an error line, and a connection hangs or drops.
    log = open(directory / "sshd.log", "wb")  # noqa: SIM115 - sshd holds it until it stops
    process = subprocess.Popen([sshd_binary, "-D", "-e", "-f", str(config)], stderr=log)
    log.close()
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.05)
    else:
        process.kill()
        raise RuntimeError(f"sshd did not start: {(directory / 'sshd.log').read_text(errors='replace')}")
    host_pub = " ".join((directory / "host_key.pub").read_text().split()[:2])
    return Sshd(port, directory / "client_key", host_pub, process, directory)
