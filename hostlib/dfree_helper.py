#!/usr/bin/python3
"""Tarn's `dfree command` for Samba: the size and free space a share shows an SMB client, with the client's own user
quota on the share's ZFS dataset taken into account (Samba asks the kernel's quotactl, which OpenZFS does not
answer). smbd runs it as the connected user, in the share's folder; it prints "<total> <free> 1024".

Standard library only; installed at /usr/local/lib/tarn/tarn-dfree (hostlib.samba.install_dfree). Anything it cannot
read leaves the folder's own numbers: a share never shows less than the truth because this failed."""

import os
import subprocess
import sys

BLOCK = 1024


def dataset_of(dev):
    """The ZFS dataset mounted with this device number, from /proc/self/mountinfo (None if it is not ZFS)."""
    with open("/proc/self/mountinfo") as fh:
        for line in fh:
            fields = line.split()
            if "-" not in fields:
                continue
            rest = fields[fields.index("-") + 1 :]
            major, _, minor = fields[2].partition(":")
            if rest[:1] == ["zfs"] and os.makedev(int(major), int(minor)) == dev:
                return rest[1].replace("\\040", " ")
    return None


def quota_of(dataset, uid):
    """(quota, used) of uid on the dataset; quota 0 when it has none. An unprivileged user may read their own."""
    argv = ["zfs", "get", "-Hp", "-o", "value", f"userquota@{uid},userused@{uid}", "--", dataset]
    env = {"LC_ALL": "C", "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}
    out = subprocess.run(argv, capture_output=True, text=True, timeout=10, env=env, check=False).stdout.split()
    return int(out[0]), int(out[1])


def answer(path, uid):
    st = os.statvfs(path)
    total, free = st.f_blocks * st.f_frsize // BLOCK, st.f_bavail * st.f_frsize // BLOCK
    try:
        dataset = dataset_of(os.stat(path).st_dev)
        if dataset:
            quota, used = quota_of(dataset, uid)
            if quota > 0:
                total = min(total, quota // BLOCK)
                free = max(0, min(free, (quota - used) // BLOCK))
    except (OSError, ValueError, IndexError, subprocess.SubprocessError):
        pass
    return total, free


if __name__ == "__main__":
    total, free = answer(sys.argv[1] if len(sys.argv) > 1 else ".", os.getuid())
    print(total, free, BLOCK)
