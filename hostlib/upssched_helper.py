#!/usr/bin/python3 -IS
"""tarn-upssched: upssched's CMDSCRIPT on a NAS Tarn manages (run as user nut). Its one timer, "onbatt", fires when
the UPS has been on battery for the policy's seconds: upsmon is asked for a forced shutdown, which it carries out
as it would at low battery (secondaries first, then SHUTDOWNCMD).

Self-contained (standard library only): Tarn writes this file's source to the NAS."""

import subprocess
import sys


def main(argv):
    if argv[:1] == ["onbatt"]:
        print("tarn-upssched: on battery for the policy's time: forced shutdown", flush=True)
        return subprocess.run(["/sbin/upsmon", "-c", "fsd"], timeout=60).returncode
    print(f"tarn-upssched: nothing to do for {argv!r}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
