"""Send one command to QEMU's human monitor (HMP) on a unix socket and print its answer.

Usage: python3 lab/hmp.py SOCKET 'command' [timeout-seconds]
"""

import socket
import sys
import time

PROMPT = b"(qemu) "


def hmp(path: str, command: str, timeout: float = 120.0) -> str:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        sock.connect(path)
        buf = b""
        while not buf.endswith(PROMPT):  # the banner, then the first prompt
            buf += sock.recv(4096)
        sock.sendall(command.encode() + b"\n")
        buf = b""
        deadline = time.monotonic() + timeout
        while not buf.endswith(PROMPT):
            if time.monotonic() > deadline:
                raise TimeoutError(f"no answer to {command!r} within {timeout} s")
            chunk = sock.recv(65536)
            if not chunk:  # quit closes the monitor
                break
            buf += chunk
    text = buf.decode(errors="replace").replace("\r", "")
    lines = [line for line in text.split("\n") if not line.startswith("(qemu)")]
    # The first line echoes the command (with terminal escapes); drop it.
    return "\n".join(lines[1:]).strip()


if __name__ == "__main__":
    print(hmp(sys.argv[1], sys.argv[2], float(sys.argv[3]) if len(sys.argv) > 3 else 120.0))
