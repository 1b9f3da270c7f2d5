#!/usr/bin/python3 -IS
"""tarn-ups-shutdown: NUT's SHUTDOWNCMD on a NAS Tarn manages (run by upsmon as root when the UPS is critical, or
after a forced shutdown). Clients first, data last: the SMB and NFS servers stopped (no writes arrive mid-export),
every pool exported (its disks say "exported": the next import finds them clean, with no "was not exported"), then
the power off. Each step is said to the journal; a step that fails does not stop the next (the battery will not
wait), but a pool that does not export is named.

Self-contained (standard library only): Tarn writes this file's source to the NAS."""

import subprocess
import sys

STEPS = [
    ["systemctl", "stop", "smbd", "nmbd", "nfs-server"],
    ["zpool", "export", "-a"],
]
POWER_OFF = ["systemctl", "poweroff"]


def run(argv, dry=False):
    print("tarn-ups-shutdown:", " ".join(argv), flush=True)
    if dry:
        return 0
    try:
        done = subprocess.run(argv, timeout=120, capture_output=True, text=True)
    except (OSError, subprocess.TimeoutExpired) as exc:
        print(f"tarn-ups-shutdown: {argv[0]} failed: {exc}", flush=True)
        return 1
    if done.returncode != 0:
        print(f"tarn-ups-shutdown: {argv[0]} said {done.stderr.strip()[-300:]}", flush=True)
    return done.returncode


def main(argv):
    dry = argv[:1] == ["--dry-run"]
    for step in STEPS:
        run(step, dry)
    if not dry:
        left = subprocess.run(["zpool", "list", "-H", "-o", "name"], capture_output=True, text=True, timeout=60)
        if left.stdout.strip():
            print(f"tarn-ups-shutdown: still imported: {' '.join(left.stdout.split())}", flush=True)
    return run(POWER_OFF, dry)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
