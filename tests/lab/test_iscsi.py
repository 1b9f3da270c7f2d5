"""iSCSI against the kernel's LIO (issue 45): the first guest exports a zvol through hostlib.iscsi (rtslib's
saveconfig.json, targetctl restore), the second guest logs in over the wire with open-iscsi and mutual CHAP, makes a
file system and writes; the target reboots for real and the data is there (Debian's boot restore, after the zvols);
a wrong CHAP secret and an initiator the ACLs do not name are refused by the target."""

import hashlib
import json
import time

import pytest

from hostlib import iscsi
from hostlib.iscsi import Acl, Lun, Target
from tests.lab.test_replication import rep_nic

pytestmark = pytest.mark.lab

IQN = "iqn.2026-11.lan.lab:tank-vol1"
INITIATOR = "iqn.1993-08.org.debian:01:second"
STRANGER = "iqn.1993-08.org.debian:01:stranger"
TARGET_ADDR, INITIATOR_ADDR = "10.78.0.1", "10.78.0.2"
TARGET_MAC = "52:54:00:12:35:59"
SECRET, MUTUAL = "InitSecret-001", "TargSecret-002"
DISK = f"/dev/disk/by-path/ip-{TARGET_ADDR}:3260-iscsi-{IQN}-lun-0"


def addressed(guest, guest2=None):
    """The wire's two ends addressed (the first guest's again after its reboot: its address is not kept)."""
    nic1 = rep_nic(guest)
    guest.sh(f"ip link set {nic1} up && ip addr replace {TARGET_ADDR}/24 dev {nic1}")
    if guest2 is None:
        return
    nic2 = rep_nic(guest2)
    guest2.sh(
        f"ip link set {nic2} address {TARGET_MAC} && ip link set {nic2} up && "
        f"ip addr replace {INITIATOR_ADDR}/24 dev {nic2}"
    )


def initiator(guest2, name: str, secret: str, mutual: str = MUTUAL) -> None:
    """open-iscsi on the second guest as `name`, its node record for the target set for mutual CHAP."""
    guest2.sh(
        f"echo InitiatorName={name} > /etc/iscsi/initiatorname.iscsi && systemctl restart iscsid && "
        f"iscsiadm -m discovery -t sendtargets -p {TARGET_ADDR} >/dev/null"
    )
    node = f"iscsiadm -m node -T {IQN} -p {TARGET_ADDR} -o update"
    for key, value in [
        ("node.session.auth.authmethod", "CHAP"),
        ("node.session.auth.username", "client1"),
        ("node.session.auth.password", secret),
        ("node.session.auth.username_in", "nas"),
        ("node.session.auth.password_in", mutual),
    ]:
        guest2.sh(f"{node} -n {key} -v {value}")


def login(guest2) -> int:
    """iscsiadm's exit status for a login (0 logged in; 24 refused for authorization)."""
    out = guest2.sh(f"iscsiadm -m node -T {IQN} -p {TARGET_ADDR} --login >/dev/null 2>&1; echo $?", timeout=120)
    return int(out.strip().splitlines()[-1])


def logout(guest2) -> None:
    guest2.sh(f"iscsiadm -m node -T {IQN} -p {TARGET_ADDR} --logout >/dev/null 2>&1 || true", timeout=120)


def test_a_zvol_served_with_mutual_chap_keeps_its_data_across_a_target_reboot(guest, guest2):
    addressed(guest, guest2)
    guest.sh("zpool create -f tank /dev/disk/by-id/virtio-zfsdisk1 && zfs create -V 256M -o volmode=dev tank/vol1 && "
             "udevadm settle", timeout=300)  # fmt: skip
    t = guest.transport()
    serial = iscsi.new_serial()
    target = Target(
        IQN,
        portals=[("0.0.0.0", 3260)],
        luns=[Lun(0, "tank/vol1", serial)],
        acls=[Acl(INITIATOR, "client1", SECRET, "nas", MUTUAL)],
    )
    started = time.monotonic()
    assert iscsi.apply(t, [target]) is True
    print(f"apply: {time.monotonic() - started:.1f} s")
    live = json.loads(t.run(["cat", "--", iscsi.CONFIG]).stdout)
    assert live["storage_objects"][0]["wwn"] == serial
    assert guest.sh(f"stat -c %a {iscsi.CONFIG}").strip() == "600"  # the CHAP secrets are root's alone

    # an initiator the ACLs do not name: refused
    initiator(guest2, STRANGER, SECRET)
    assert login(guest2) != 0
    # the right name, a wrong secret: refused
    initiator(guest2, INITIATOR, "WrongSecret-99")
    assert login(guest2) == 24
    # the right name and secrets: in, and both sides see the session
    initiator(guest2, INITIATOR, SECRET)
    assert login(guest2) == 0
    print("configfs info:", guest.sh(f"cat {iscsi.CONFIGFS}/{IQN}/tpgt_1/acls/{INITIATOR}/info"), sep="\n")
    (session,) = iscsi.sessions(t)
    assert (session.target, session.initiator, session.state) == (IQN, INITIATOR, "LOGGED_IN")
    assert session.addresses == [INITIATOR_ADDR]
    guest2.sh(f"udevadm settle && test -b {DISK} && mkfs.ext4 -q {DISK} && mkdir -p /mnt/lun && mount {DISK} /mnt/lun "
              "&& head -c 16M /dev/urandom > /mnt/lun/data && sync", timeout=300)  # fmt: skip
    written = guest2.sh("sha256sum /mnt/lun/data").split()[0]
    guest2.sh("umount /mnt/lun")
    logout(guest2)

    seconds = guest.reboot()
    print(f"target reboot: {seconds:.0f} s")
    addressed(guest)
    assert guest.sh("systemctl is-active rtslib-fb-targetctl").strip() == "active"
    assert login(guest2) == 0
    guest2.sh(f"udevadm settle && mount {DISK} /mnt/lun", timeout=120)
    assert guest2.sh("sha256sum /mnt/lun/data").split()[0] == written
    guest2.sh("umount /mnt/lun")
    logout(guest2)
    assert (
        hashlib.sha256(iscsi.render([target]).encode()).hexdigest()
        == hashlib.sha256(t.run(["cat", "--", iscsi.CONFIG]).stdout.encode()).hexdigest()
    )  # nothing saved over Tarn's file at boot
