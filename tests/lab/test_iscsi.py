"""iSCSI against the kernel's LIO (issue 45): the first guest exports a zvol through hostlib.iscsi (rtslib's
saveconfig.json, targetctl restore), the second guest logs in over the wire with open-iscsi and mutual CHAP, makes a
file system and writes; the target reboots for real and the data is there (Debian's boot restore, after the zvols);
a wrong CHAP secret and an initiator the ACLs do not name are refused by the target. Through Tarn's services: a
target on two portals answers on both, and an encrypted zvol's LUN goes offline when Tarn locks it and comes back,
the same disk, once unlocked."""

import hashlib
import json
import time

import pytest

from encryption import services as encryption
from hostlib import iscsi
from hostlib.iscsi import Acl, Lun, Target
from iscsi import services
from iscsi.models import Target as TargetRow
from pools.services import inventory_refresh
from tests.lab.test_replication import rep_nic

pytestmark = pytest.mark.lab

IQN = "iqn.2026-11.lan.lab:tank-vol1"
INITIATOR = "iqn.1993-08.org.debian:01:second"
STRANGER = "iqn.1993-08.org.debian:01:stranger"
TARGET_ADDR, INITIATOR_ADDR = "10.78.0.1", "10.78.0.2"
TARGET_MAC = "52:54:00:12:35:59"
SECRET, MUTUAL = "InitSecret-001", "TargSecret-002"
PASSPHRASE = "a lab passphrase 45"
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


def initiator(guest2, name: str, secret: str, mutual: str = MUTUAL, portal: str = TARGET_ADDR) -> str:
    """open-iscsi on the second guest as `name`, its node record for the target's portal set for mutual CHAP; what
    discovery found."""
    found = guest2.sh(
        f"echo InitiatorName={name} > /etc/iscsi/initiatorname.iscsi && systemctl restart iscsid && "
        f"iscsiadm -m discovery -t sendtargets -p {TARGET_ADDR}"
    )
    node = f"iscsiadm -m node -T {IQN} -p {portal} -o update"
    for key, value in [
        ("node.session.auth.authmethod", "CHAP"),
        ("node.session.auth.username", "client1"),
        ("node.session.auth.password", secret),
        ("node.session.auth.username_in", "nas"),
        ("node.session.auth.password_in", mutual),
    ]:
        guest2.sh(f"{node} -n {key} -v {value}")
    return found


def login(guest2, portal: str = TARGET_ADDR) -> int:
    """iscsiadm's exit status for a login (0 logged in; 24 refused for authorization)."""
    out = guest2.sh(f"iscsiadm -m node -T {IQN} -p {portal} --login >/dev/null 2>&1; echo $?", timeout=120)
    return int(out.strip().splitlines()[-1])


def logout(guest2, portal: str = TARGET_ADDR) -> None:
    guest2.sh(f"iscsiadm -m node -T {IQN} -p {portal} --logout >/dev/null 2>&1 || true", timeout=120)


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


def test_through_tarn_two_portals_answer_and_a_locked_zvols_lun_goes_offline_until_unlocked(
    guest, guest2, lab_host, admin_user, run_queued
):
    addressed(guest, guest2)
    guest.sh("zpool create -f tank /dev/disk/by-id/virtio-zfsdisk1", timeout=120)
    inventory_refresh(host=lab_host)
    op = run_queued(encryption.encrypted_create_start, host=lab_host, user=admin_user, name="tank/evol",
                    volume_size="64M", passphrase=PASSPHRASE, passphrase_confirm=PASSPHRASE, pbkdf2iters=100_000)  # fmt: skip
    assert op.status == "succeeded", op.message
    inventory_refresh(host=lab_host)
    op = run_queued(services.target_save_start, host=lab_host, user=admin_user, iqn=IQN,
                    portals=f"{TARGET_ADDR}\n{TARGET_ADDR}:3261")  # fmt: skip
    assert op.status == "succeeded", op.message
    target = TargetRow.objects.get(host=lab_host)
    op = run_queued(services.lun_add_start, host=lab_host, user=admin_user, target=target.pk, zvol="tank/evol")
    assert op.status == "succeeded", op.message
    op = run_queued(services.initiator_save_start, host=lab_host, user=admin_user, target=target.pk, iqn=INITIATOR,
                    chap_user="client1", chap_secret=SECRET, mutual_user="nas", mutual_secret=MUTUAL)  # fmt: skip
    assert op.status == "succeeded", op.message

    second = f"{TARGET_ADDR}:3261"
    found = initiator(guest2, INITIATOR, SECRET, portal=second)
    assert f"{TARGET_ADDR}:3260,1 {IQN}" in found and f"{TARGET_ADDR}:3261,1 {IQN}" in found, found
    assert login(guest2, second) == 0
    disk = f"/dev/disk/by-path/ip-{second}-iscsi-{IQN}-lun-0"
    guest2.sh(f"udevadm settle && test -b {disk}", timeout=120)
    guest2.sh(f"head -c 1M /dev/urandom > /tmp/block && dd if=/tmp/block of={disk} bs=1M oflag=direct status=none")
    written = guest2.sh("sha256sum /tmp/block").split()[0]
    logout(guest2, second)

    lun_dir = f"{iscsi.CONFIGFS}/{IQN}/tpgt_1/lun"
    assert guest.sh(f"ls {lun_dir}").split() == ["lun_0"]
    op = run_queued(encryption.lock_start, host=lab_host, user=admin_user, root="tank/evol")
    assert op.status == "succeeded", op.message
    assert guest.sh("zfs get -H -o value keystatus tank/evol").strip() == "unavailable"
    assert guest.sh(f"ls {lun_dir}").split() == []  # LIO let go of the zvol before its key unloaded
    assert login(guest2, second) == 0  # the target is still there, without its disk
    guest2.sh("udevadm settle", timeout=60)
    assert guest2.sh(f"test -e {disk}; echo $?").strip() == "1"
    logout(guest2, second)

    op = run_queued(encryption.unlock_start, host=lab_host, user=admin_user, roots=["tank/evol"], secret=PASSPHRASE)
    assert op.status == "succeeded", op.message
    assert guest.sh(f"ls {lun_dir}").split() == ["lun_0"]
    assert login(guest2, second) == 0
    guest2.sh(f"udevadm settle && test -b {disk}", timeout=120)
    read = guest2.sh(f"dd if={disk} bs=1M count=1 iflag=direct status=none | sha256sum").split()[0]
    assert read == written  # the same disk
    logout(guest2, second)
