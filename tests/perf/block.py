"""Issue 45 figures. Bond failover: pings lost when a bond's active NIC loses its link. UPS: seconds from low battery
to power-off. iSCSI, between the two lab guests over their wire (UDP between two QEMUs, both emulated): the same
fio jobs (a sequential write of 1 MiB blocks, then 4k random reads, direct I/O) on a zvol served by Tarn over iSCSI
and logged into from the second guest, on the same zvol locally in the first guest, and on a file of a dataset of
the same pool over NFS from the second guest, side by side (the ratios are the figures: the machine is emulated).
The anchor: zvols were ~3x slower than datasets for the same job in openzfs#4265. The reads after the write come
largely from the target's ARC, for all three alike (what a client re-reading recent data sees)."""

import json
import time

from tests.perf.foundation import lab_host, run_operations_inline
from tests.perf.replication import _nic

IQN = "iqn.2026-11.lan.lab:perf"
INITIATOR = "iqn.1993-08.org.debian:01:perf"
TARGET_ADDR, INITIATOR_ADDR = "10.78.0.1", "10.78.0.2"
TARGET_MAC = "52:54:00:12:35:59"
SIZE = "512M"
DISK = f"/dev/disk/by-path/ip-{TARGET_ADDR}:3260-iscsi-{IQN}-lun-0"
WRITE = f"--rw=write --bs=1M --size={SIZE} --iodepth=8"
READ = f"--rw=randread --bs=4k --size={SIZE} --iodepth=16 --runtime=20 --time_based"


def _fio(lab, target: str, job: str) -> dict:
    out = lab.sh(
        f"fio --name=perf --filename={target} {job} --direct=1 --ioengine=libaio --output-format=json",
        timeout=900,
    )
    return json.loads(out[out.index("{") :])["jobs"][0]


def lab_iscsi():
    found = lab_host("block")
    if found is None:
        return
    first, host = found
    from tests.support.lab import lab_up
    from tests.support.lab_fixtures import SECOND

    second = lab_up(overrides=SECOND)
    second.reset()
    run_operations_inline()
    from appliance.models import Operation, User
    from iscsi import services
    from iscsi.models import Target
    from pools.services import inventory_refresh

    user = User.objects.filter(username="perf").first()
    nic1 = _nic(first.transport(), first.env["LAB_REP_MAC"])
    nic2 = _nic(second.transport(), second.env["LAB_REP_MAC"])
    first.sh(f"ip link set {nic1} up && ip addr replace {TARGET_ADDR}/24 dev {nic1}")
    second.sh(
        f"ip link set {nic2} address {TARGET_MAC} && ip link set {nic2} up && "
        f"ip addr replace {INITIATOR_ADDR}/24 dev {nic2}"
    )
    first.sh(
        "zpool create -f tank /dev/disk/by-id/virtio-zfsdisk1 && zfs create -V 1G -o volmode=dev tank/vol && "
        "zfs create -o recordsize=1M tank/fs && chmod 0777 /tank/fs && "
        f"exportfs -o rw,no_root_squash,sync {INITIATOR_ADDR}:/tank/fs && udevadm settle",
        timeout=300,
    )
    inventory_refresh(host=host)
    started = time.monotonic()

    def done(op):
        op = Operation.objects.get(pk=op.pk)
        assert op.status == "succeeded", op.message

    done(services.target_save_start(host=host, user=user, iqn=IQN))
    target = Target.objects.get(host=host, iqn=IQN).pk
    done(services.lun_add_start(host=host, user=user, target=target, zvol="tank/vol"))
    done(services.initiator_save_start(host=host, user=user, target=target, iqn=INITIATOR))
    yield "block_iscsi_setup", time.monotonic() - started, "s", "a target, a LUN and an initiator through Tarn"
    second.sh(
        f"echo InitiatorName={INITIATOR} > /etc/iscsi/initiatorname.iscsi && systemctl restart iscsid && "
        f"iscsiadm -m discovery -t sendtargets -p {TARGET_ADDR} >/dev/null && "
        f"iscsiadm -m node -T {IQN} -p {TARGET_ADDR} --login >/dev/null && udevadm settle && test -b {DISK} && "
        f"mkdir -p /mnt/nfs && mount -t nfs -o vers=4.2 {TARGET_ADDR}:/tank/fs /mnt/nfs",
        timeout=300,
    )
    device = second.sh(f"readlink -f {DISK}").strip()  # fio reads ':' in a file name as a list of files
    sides = {
        "local": (first, first.sh("readlink -f /dev/zvol/tank/vol").strip()),
        "iscsi": (second, device),
        "nfs": (second, "/mnt/nfs/perf.file"),
    }
    found = {}
    for name, (lab, target) in sides.items():
        write, read = _fio(lab, target, WRITE), _fio(lab, target, READ)
        found[name] = (write["write"]["bw"] / 1024, read["read"]["iops"])
        yield f"block_{name}_seq_write", found[name][0], "MiB/s", f"fio 1M sequential write, {SIZE}, direct"
        yield f"block_{name}_rand_read", found[name][1], "IOPS", "fio 4k random read, iodepth 16, 20 s"
    for name in ("iscsi", "nfs"):
        yield f"block_{name}_over_local_write", found[name][0] / found["local"][0], "x", "the wire and protocol's cost"
        yield f"block_{name}_over_local_read", found[name][1] / found["local"][1], "x", "the wire and protocol's cost"
    yield (
        "block_iscsi_over_nfs_write",
        found["iscsi"][0] / found["nfs"][0],
        "x",
        "a zvol against a dataset (#4265: ~1/3)",
    )
    yield "block_iscsi_over_nfs_read", found["iscsi"][1] / found["nfs"][1], "x", "a zvol against a dataset"
    second.sh(f"umount /mnt/nfs; iscsiadm -m node -T {IQN} -p {TARGET_ADDR} --logout >/dev/null 2>&1; true")


def lab_bond_failover():
    """An active-backup bond of the first guest's two data NICs made through Tarn, this machine pinging it every
    20 ms through a bridge of both taps while QEMU cuts the first NIC's link: the pings lost against one miimon
    interval's worth (100 ms: 5 pings)."""
    found = lab_host("bond failover")
    if found is None:
        return
    lab, host = found
    run_operations_inline()
    from appliance.models import User
    from tests.lab.test_bonds import MIIMON, failover, one_switch
    from tests.lab.test_tuning import data_nic
    from tuning import services
    from tuning.models import ChangeSet

    user = User.objects.filter(username="perf").first()
    nics = [data_nic(lab), data_nic(lab, "LAB_DATA1_MAC")]
    address = lab.env["LAB_GUEST_DATA_ADDR"].split("/")[0]
    services.links_refresh(host=host)
    with one_switch(lab):
        started = time.monotonic()
        cs = services.bond_create_start(host=host, user=user, name="bond0", ports=nics, miimon=MIIMON, seconds=120)
        cs = ChangeSet.objects.get(pk=cs.pk)
        assert cs.status == "pending", cs.message
        yield "bond_create_applied", time.monotonic() - started, "s", "planned, armed, held and applied through Tarn"
        lost = []
        for _ in range(3):  # each time the port carrying the traffic is cut (the other took over last time)
            active = lab.sh("cat /sys/class/net/bond0/bonding/active_slave").strip()
            lost.append(failover(lab, address, netdev="t0" if active == nics[0] else "t1")[1])
            time.sleep(1)  # the link back, seen by miimon: the port is a backup again
        yield (
            "bond_failover_lost_pings",
            max(lost),
            "pings",
            f"worst of 3 cuts of the active port ({lost}), 20 ms apart",
        )
        yield "bond_failover_over_miimon", max(lost) / (MIIMON / 20), "x", "lost against one miimon interval's pings"
    lab.reset()


def lab_ups_power_off():
    """NUT's dummy-ups playing on line, on battery, then low battery to the first guest as its own primary: the
    seconds from low battery to the guest's power-off (shares stopped, pools exported, poweroff)."""
    found = lab_host("UPS shutdown")
    if found is None:
        return
    lab, _ = found
    from hostlib import nut
    from tests.lab.test_ups import DEV, PASSWORD, STATES, play, wait_for
    from tests.support.lab import lab_running, lab_up

    lab.sh("zpool create -f tank /dev/disk/by-id/virtio-zfsdisk1 && zfs create tank/docs", timeout=300)
    lab.sh(f"cat > {DEV} <<'TXT'\n{STATES['OL']}TXT")
    t = lab.transport()
    nut.apply(t, nut.Ups("rack", "local", PASSWORD, driver="dummy-ups", port="rack.dev"))
    wait_for(t, {"OL"})
    play(lab, "LB")
    started = time.monotonic()
    while lab_running() and time.monotonic() - started < 180:
        time.sleep(0.2)
    assert not lab_running(), "the guest did not power off within 3 minutes of low battery"
    yield "ups_low_battery_to_power_off", time.monotonic() - started, "s", "upsmon's FSD, Tarn's shutdown, poweroff"
    lab_up().reset()


CHECKS = [lab_iscsi, lab_bond_failover, lab_ups_power_off]
