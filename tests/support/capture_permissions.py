"""Capture what OpenZFS prints for quotas and projects in the lab guest, for the unit tests of hostlib.quotas'
parser: `python -m tests.support.capture_permissions` with the lab running. A pool with two users and a group writing
files, quotas set on some, a project on a folder; each listing's output is written to
tests/fixtures/host/permissions/ with its argv and exit status in MANIFEST.json. The guest is reset at the end."""

import json
from pathlib import Path

from hostlib import quotas
from tests.support.lab import lab_up

OUT = Path(__file__).resolve().parent.parent / "fixtures" / "host" / "permissions"
DISK = "/dev/disk/by-id/virtio-zfsdisk1"


def main() -> None:
    guest = lab_up()
    guest.reset()
    t = guest.transport()
    guest.sh(
        f"zpool create -f tank {DISK} && zfs create -o acltype=posix -o xattr=sa tank/office && "
        "groupadd -g 3100 officers && useradd -u 3001 -G officers carol && useradd -u 3002 dave && "
        "install -d -o carol -g officers -m 2775 /tank/office/team && "
        "setpriv --reuid=3001 --regid=3100 --clear-groups dd if=/dev/zero of=/tank/office/team/c bs=1M count=3 && "
        "setpriv --reuid=3002 --regid=3002 --clear-groups dd if=/dev/zero of=/tank/office/d bs=1M count=1 "
        "2>/dev/null; true; "
        "zfs set userquota@carol=10M userobjquota@carol=100 groupquota@officers=50M tank/office && "
        "mkdir /tank/office/apollo && zfs project -p 42 -s /tank/office/apollo && "
        "dd if=/dev/zero of=/tank/office/apollo/x bs=1M count=2 2>/dev/null && "
        "zfs set projectquota@42=20M tank/office && sync && sleep 6"
    )
    OUT.mkdir(parents=True, exist_ok=True)
    manifest: dict[str, dict] = {}
    for kind in ("user", "group", "project"):
        argv = quotas.space_argv(kind, "tank/office")
        result = t.run(argv, check=False, timeout=60)
        (OUT / f"{kind}space.txt").write_text(result.stdout)
        manifest[f"{kind}space.txt"] = {"argv": argv, "exit": result.returncode}
    argv = ["zfs", "project", "-d", "/tank/office/apollo"]
    result = t.run(["python3", "-c", "print(1)"], check=False)  # the helper's python is there
    manifest["python3"] = {"argv": ["python3", "-c", "print(1)"], "exit": result.returncode}
    guest.sh(f"{' '.join(argv)} > /tmp/p.txt 2>&1; true")
    (OUT / "project_d.txt").write_text(guest.sh("cat /tmp/p.txt"))
    manifest["project_d.txt"] = {"argv": argv, "exit": 0}
    (OUT / "MANIFEST.json").write_text(json.dumps(manifest, indent=1) + "\n")
    guest.reset()


if __name__ == "__main__":
    main()
