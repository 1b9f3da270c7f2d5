"""Loopback mounts of the host's own shares (a benchmark of SMB or NFS as a client sees them, on the NAS itself):
an SMB share with a credentials file (never a password in argv), an NFS export over v3, and their unmount."""

from hostlib.errors import CommandFailed
from hostlib.fio import check_directory
from hostlib.runner import Transport
from hostlib.samba import SHARE_NAME

SMB_OPTIONS = "vers=3.1.1"  # SMB3, as modern clients; the share's own settings (signing, encryption) apply
# What a client of the share may have put in it is never followed, run or opened as a device by the NAS's root.
SAFE_OPTIONS = "nosymfollow,nodev,nosuid,noexec"
# mount.cifs knows no nosymfollow (the mount fails): over SMB a link is resolved by smbd on the server, inside the
# share only (Samba's `wide links = no`), so the client never follows one into the NAS's own /dev.
SMB_SAFE_OPTIONS = "nodev,nosuid,noexec"
# v3: over v4.2 the kernel client refuses root's writes to a root_squash export once its files are created (they
# belong to nobody; measured in the lab), while v3 writes them as the squashed user, as a client's user would.
NFS_OPTIONS = "vers=3,proto=tcp"


def mount_smb(t: Transport, share: str, mountpoint: str, *, credentials: str) -> list[str]:
    """credentials: a file (username=, password=) only root reads; returns the argv run."""
    if not SHARE_NAME.fullmatch(share):
        raise ValueError(f"not a share name: {share[:80]!r}")
    options = f"credentials={check_directory(credentials)},{SMB_OPTIONS},{SMB_SAFE_OPTIONS}"
    argv = ["mount", "-t", "cifs", "-o", options, "--", f"//127.0.0.1/{share}", check_directory(mountpoint)]
    t.run(argv, mutating=True, timeout=60)
    return argv


def mount_nfs(t: Transport, path: str, mountpoint: str) -> list[str]:
    argv = [
        "mount",
        "-t",
        "nfs",
        "-o",
        f"{NFS_OPTIONS},{SAFE_OPTIONS}",
        "--",
        f"127.0.0.1:{check_directory(path)}",
        check_directory(mountpoint),
    ]
    t.run(argv, mutating=True, timeout=60)
    return argv


def unmount(t: Transport, mountpoint: str) -> None:
    """Unmount if mounted; a busy mount is detached lazily (it goes once the last file closes)."""
    argv = ["umount", "--", check_directory(mountpoint)]
    result = t.run(argv, mutating=True, check=False, timeout=60)
    if result.returncode != 0 and "not mounted" not in result.stderr and "no mount point" not in result.stderr:
        lazy = t.run(["umount", "-l", "--", mountpoint], mutating=True, check=False, timeout=60)
        if lazy.returncode != 0 and "not mounted" not in lazy.stderr:
            raise CommandFailed(argv, lazy.returncode, lazy.stderr)
