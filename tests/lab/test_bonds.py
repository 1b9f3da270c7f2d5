"""Bonds and VLANs against the lab guest's real kernel and networkd: an active-backup bond of the two data NICs keeps
a ping stream going when QEMU cuts one NIC's link, and left unkept is undone by the guest itself with every address
and route back; a kept bond is written for networkd and deleted again; a VLAN on the replication NIC carries tagged
frames to the second guest's VLAN over the wire (this machine's kernel has no 802.1Q module, so the peer VLAN is the
second guest's, not this machine's)."""

import re
import subprocess
import time
from contextlib import contextmanager

import pytest
from django.utils import timezone

from tests.lab.test_replication import rep_nic
from tests.lab.test_tuning import addresses_and_routes, data_nic, local
from tuning import services
from tuning.models import ChangeSet, Link

pytestmark = [pytest.mark.lab, pytest.mark.lane(1)]
MIIMON = 100
PEER_MAC = "52:54:00:12:35:59"  # the second guest's wire NIC (both guests boot with the same MAC on it)


@contextmanager
def one_switch(lab):
    """This machine as a switch in front of both data NICs: the taps of the guest's two data NICs in one bridge
    (tbond) carrying this machine's data address, so either NIC of a bond reaches it. Put back afterwards."""
    tap, tap1, netns = lab.env["LAB_PEER_IFACE"], lab.env["LAB_NS_IFACE"], lab.env["LAB_NETNS"]
    peer, ns_addr = lab.env["LAB_PEER_ADDR"], lab.env["LAB_NS_ADDR"]
    steps = [
        ("ip", "-n", netns, "link", "set", tap1, "netns", "1"),
        ("ip", "link", "add", "tbond", "type", "bridge", "forward_delay", "0"),
        ("ip", "addr", "del", peer, "dev", tap),
        ("ip", "link", "set", tap, "master", "tbond"),
        ("ip", "link", "set", tap1, "master", "tbond", "up"),
        ("ip", "addr", "add", peer, "dev", "tbond"),
        ("ip", "link", "set", "tbond", "up"),
    ]
    try:
        for argv in steps:
            local(*argv, check=True)
        yield peer.split("/")[0]
    finally:
        for argv in (
            ("ip", "link", "del", "tbond"),
            ("ip", "link", "set", tap1, "netns", netns),
            ("ip", "-n", netns, "addr", "add", ns_addr, "dev", tap1),
            ("ip", "-n", netns, "link", "set", tap1, "up"),
            ("ip", "addr", "add", peer, "dev", tap),
            ("ip", "link", "set", tap, "up"),
        ):
            local(*argv)
        lab.monitor("set_link t0 on")


@pytest.fixture
def both_taps_on_one_switch(guest):
    with one_switch(guest) as peer:
        yield peer


def failover(lab, address: str, seconds: float = 8, netdev: str = "t0") -> tuple[int, int]:
    """(sent, lost) of a ping stream 20 ms apart to address while QEMU cuts a data NIC's link 3 s in (t0: the
    first's, t1: the second's)."""
    stream = ping_stream(address, seconds)
    time.sleep(3)
    lab.monitor(f"set_link {netdev} off")  # the NIC's cable pulled
    try:
        return lost(stream)
    finally:
        lab.monitor(f"set_link {netdev} on")


def ping_stream(address: str, seconds: float, interval: float = 0.02) -> subprocess.Popen:
    argv = ["ping", "-n", "-i", str(interval), "-w", str(int(seconds)), "-W", "1", address]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def lost(stream: subprocess.Popen) -> tuple[int, int]:
    out, _ = stream.communicate(timeout=120)
    found = re.search(r"(\d+) packets transmitted, (\d+) received", out)
    assert found, out
    sent, got = int(found.group(1)), int(found.group(2))
    return sent, sent - got


def test_an_active_backup_bond_keeps_a_ping_stream_through_a_cut_link_and_unkept_puts_everything_back(
    guest, lab_host, admin_user, run_queued, both_taps_on_one_switch
):
    nics = [data_nic(guest), data_nic(guest, "LAB_DATA1_MAC")]
    address = guest.env["LAB_GUEST_DATA_ADDR"].split("/")[0]
    peer = both_taps_on_one_switch
    guest.sh(f"ip route add 10.99.0.0/24 via {peer} dev {nics[0]}")  # an admin's route through the first NIC
    run_queued(services.tuning_refresh_start, host=lab_host, user=admin_user)
    before = addresses_and_routes(guest)
    cs = run_queued(
        services.bond_create_start, host=lab_host, user=admin_user, name="bond0", ports=nics, mode="active-backup",
        miimon=MIIMON, seconds=60,  # the window: the failover (~12 s) well inside it, then the host undoes it
    )  # fmt: skip
    assert cs.status == "pending", cs.message
    assert f"{address}/24" in guest.sh("ip -br addr show dev bond0")
    assert guest.sh("cat /sys/class/net/bond0/bonding/active_slave").strip() == nics[0]

    sent, missing = failover(guest, address)
    per_miimon = MIIMON / 20  # packets sent in one miimon interval at 20 ms apart
    print(f"\nbond failover: {missing} of {sent} pings lost (one miimon interval is {per_miimon:.0f})")
    assert guest.sh("cat /sys/class/net/bond0/bonding/active_slave").strip() == nics[1], "the backup took over"
    assert sent > 300 and missing <= 50, "the stream went on through the second NIC"

    # not kept: the guest puts every address and route back itself (networkd is held off until Tarn hands back)
    deadline = cs.deadline + timezone.timedelta(seconds=30)
    while "bond0" in guest.sh("ip -br link"):
        assert timezone.now() < deadline, "the host did not restore itself"
        time.sleep(0.5)
    time.sleep(1)
    after = addresses_and_routes(guest)
    assert after == before, {"lost": (before[0] - after[0], before[1] - after[1]), "new": after[1] - before[1]}
    ChangeSet.objects.filter(pk=cs.pk).update(deadline=timezone.now() - timezone.timedelta(seconds=10))
    assert run_queued(services.changes_settle) == 1
    cs.refresh_from_db()
    assert cs.status == "rolled_back" and cs.target["held"] is False
    assert "04-tarn-hold" not in guest.sh("ls /run/systemd/network/ 2>/dev/null; true")
    # the guest speaks first: this machine's bridge learnt the guest's MAC on the second tap during the failover
    assert " 0% packet loss" in guest.sh(f"ping -c 2 -W 3 {peer}; true"), "networkd has the NICs again"
    assert f"{address}/24" in guest.sh(f"ip -br addr show dev {nics[0]}")


def test_a_kept_bond_is_written_for_networkd_and_deleting_it_gives_the_address_back(
    guest, lab_host, admin_user, run_queued
):
    nics = [data_nic(guest), data_nic(guest, "LAB_DATA1_MAC")]
    address = guest.env["LAB_GUEST_DATA_ADDR"]
    run_queued(services.tuning_refresh_start, host=lab_host, user=admin_user)
    cs = run_queued(services.bond_create_start, host=lab_host, user=admin_user, name="bond0", ports=nics, seconds=120)
    assert cs.status == "pending", cs.message
    kept = run_queued(services.change_keep_start, change_set=cs, user=admin_user)
    assert kept.status == "succeeded", kept.message
    netdev = guest.sh("cat /etc/systemd/network/05-tarn-bond0.netdev")
    assert "Kind=bond" in netdev and "Mode=active-backup" in netdev and "MIIMonitorSec=100ms" in netdev
    assert "Bond=bond0" in guest.sh(f"cat /etc/systemd/network/05-tarn-{nics[1]}.network")
    time.sleep(2)  # networkd has the links from Tarn's files now: the bond still carries the address, both ports in
    assert address in guest.sh("ip -br addr show dev bond0")
    assert guest.sh(f"cat /sys/class/net/{nics[1]}/master/uevent | grep INTERFACE").strip() == "INTERFACE=bond0"
    assert " 0% packet loss" in local("ping", "-c", "2", "-W", "3", address.split("/")[0]).stdout
    assert Link.objects.get(host=lab_host, name="bond0").info["mode"] == "active-backup"

    cs = run_queued(
        services.bond_delete_start, host=lab_host, user=admin_user, name="bond0", confirm="bond0", seconds=60
    )
    assert cs.status == "pending", cs.message
    kept = run_queued(services.change_keep_start, change_set=cs, user=admin_user)
    assert kept.status == "succeeded", kept.message
    assert address in guest.sh(f"ip -br addr show dev {nics[0]}")
    assert "bond0" not in guest.sh("ls /etc/systemd/network/; ip -br link")
    assert " 0% packet loss" in local("ping", "-c", "2", "-W", "3", address.split("/")[0]).stdout


def test_a_vlan_carries_tagged_frames_to_the_peers_vlan_and_not_to_its_untagged_address(
    guest, guest2, lab_host, admin_user, run_queued
):
    nic, nic2 = rep_nic(guest), rep_nic(guest2)
    guest.sh(f"ip link set {nic} up")
    # the peer answers ARP only for an address of the link a request came in on (not the weak host model's any),
    # so only a tagged request reaches 10.79.42.2 (on its VLAN) and only an untagged one 10.79.42.3 (on its NIC)
    guest2.sh(
        "sysctl -qw net.ipv4.conf.all.arp_ignore=1 && "
        f"ip link set {nic2} address {PEER_MAC} && ip link set {nic2} up && ip addr add 10.79.42.3/24 dev {nic2} && "
        f"ip link add link {nic2} name {nic2}.42 type vlan id 42 && ip addr add 10.79.42.2/24 dev {nic2}.42 && "
        f"ip link set {nic2}.42 up"
    )
    run_queued(services.tuning_refresh_start, host=lab_host, user=admin_user)
    cs = run_queued(
        services.vlan_create_start, host=lab_host, user=admin_user, link=nic, vid=42, addresses=["10.79.42.1/24"],
        seconds=120,
    )  # fmt: skip
    assert cs.status == "pending", cs.message
    name = f"{nic}.42"
    assert "10.79.42.1/24" in guest.sh(f"ip -br addr show dev {name}")
    assert " 0% packet loss" in guest.sh("ping -c 3 -W 3 10.79.42.2; true"), "the peer's VLAN 42 answers"
    # the same subnet untagged on the peer's bare NIC: frames from the VLAN never reach it
    assert " 100% packet loss" in guest.sh("ping -c 2 -W 2 10.79.42.3; true")
    kept = run_queued(services.change_keep_start, change_set=cs, user=admin_user)
    assert kept.status == "succeeded", kept.message
    assert f"VLAN={name}" in guest.sh(f"cat /etc/systemd/network/05-tarn-{nic}.network")
    assert "Id=42" in guest.sh(f"cat /etc/systemd/network/05-tarn-{name}.netdev")
    time.sleep(2)
    assert " 0% packet loss" in guest.sh("ping -c 2 -W 3 10.79.42.2; true"), "still, with networkd's files"

    cs = run_queued(services.vlan_delete_start, host=lab_host, user=admin_user, name=name, confirm=name, seconds=60)
    assert cs.status == "pending", cs.message
    kept = run_queued(services.change_keep_start, change_set=cs, user=admin_user)
    assert kept.status == "succeeded", kept.message
    assert name not in guest.sh("ip -br link; ls /etc/systemd/network/")
