"""`make fixtures`: run the real commands Tarn parses in the lab guest and store their output.

Writes tests/fixtures/host/<name>.<json|txt> and MANIFEST.json (command, OpenZFS version, when), then
resets the guest. Parser tests read these files: output captured from a real system, not invented.
"""

import datetime
import json
import subprocess
import time
from pathlib import Path

from hostlib import disks, facts, fio, net, smart, zfs
from hostlib.facts import parse_zfs_version
from tests.support.lab import lab_up

OUT = Path(__file__).resolve().parents[1] / "fixtures" / "host"
D = "/dev/disk/by-id/virtio-zfsdisk{}".format

SETUP = [  # a pool with every vdev class: data mirror, special mirror, log mirror, cache, spare; datasets, a zvol,
    # a snapshot, and a scrub that has finished (its scan stats are in zpool status)
    [
        "zpool",
        "create",
        "-f",
        "-o",
        "ashift=12",
        "-O",
        "compression=lz4",
        "tank",
        "mirror",
        D(1),
        D(2),
        "special",
        "mirror",
        D(3),
        D(4),
        "log",
        "mirror",
        D(5),
        D(6),
        "cache",
        D(7),
        "spare",
        D(8),
    ],
    ["zfs", "create", "-o", "recordsize=1M", "tank/data"],
    ["zfs", "create", "-V", "64M", "-o", "volblocksize=16k", "tank/vol"],
    ["zfs", "snapshot", "-r", "tank@first"],
    ["zpool", "scrub", "-w", "tank"],
]

CAPTURE = {
    "zfs_version.txt": ["zfs", "version"],
    "icp_impl.txt": ["grep", "-H", ".", "--", *facts.ICP_IMPLS],
    "zfs_version.json": ["zfs", "version", "-j"],
    "zpool_status.json": ["zpool", "status", "-j", "--json-int", "-P"],
    "zpool_list.json": ["zpool", "list", "-j", "--json-int"],
    "zpool_list_hp.txt": ["zpool", "list", "-H", "-p"],
    "zpool_get.json": ["zpool", "get", "-j", "--json-int", "all", "tank"],
    "zfs_list.json": ["zfs", "list", "-j", "--json-int", "-t", "all"],
    "zfs_list_hp.txt": ["zfs", "list", "-H", "-p", "-t", "all", "-o", "name,type,used,avail,refer,mountpoint"],
    "zfs_get.json": ["zfs", "get", "-j", "--json-int", "all", "tank/data"],
    "zfs_get_hp.txt": ["zfs", "get", "-H", "-p", "all", "tank/data"],
    "lsblk.json": ["lsblk", "-J", "-b", "-o", disks.LSBLK_COLUMNS],
    "by_id.txt": disks.BY_ID_ARGV,
    "ip_link.json": ["ip", "-j", "link"],
    "ip_addr.json": ["ip", "-j", "addr"],
    "bridge_link.json": ["bridge", "-j", "link"],
    "ip_addr_details.json": ["ip", "-j", "-d", "-s", "addr", "show"],
    "ip_route_default.json": ["ip", "-j", "route", "show", "default"],
    "sysctl_tunables.txt": ["sysctl", "-a", "--pattern", r"^(net\.core\.|net\.ipv4\.tcp_|vm\.)"],
    "zfs_parameters.txt": ["grep", "-r", "-H", ".", "--", "/sys/module/zfs/parameters"],
    "testparm.txt": ["testparm", "-s"],
    "exportfs.txt": ["exportfs", "-v"],
    "arcstats.txt": ["cat", "/proc/spl/kstat/zfs/arcstats"],
    "meminfo.txt": ["cat", "/proc/meminfo"],
    "osrelease.txt": ["cat", "/proc/sys/kernel/osrelease"],
    "zfs_module_version.txt": ["cat", "/sys/module/zfs/version"],
    "fio.json": [
        "fio",
        "--name=seqwrite",
        "--directory=/tank/data",
        "--rw=write",
        "--bs=1M",
        "--size=32M",
        "--ioengine=psync",
        "--end_fsync=1",
        "--output-format=json",
    ],
}


def main() -> None:
    lab = lab_up()
    lab.reset()  # start from the clean guest, whatever was done to it by hand
    try:
        capture(lab)
        capture_smart(lab)
    finally:
        lab.nvme(False)
        print(f"reset the lab in {lab.reset():.1f} s")


def capture_smart(lab) -> None:
    """smartctl on the lab's disks (tests/fixtures/host/smart/lab): QEMU's SATA disks (ATA SMART, a self-test in
    the log), its NVMe drive healthy and with a critical warning set through the monitor, a virtio disk (no SMART),
    and the scan. What QEMU cannot show (a drive asleep, aborted tests, failing sectors) comes from real drives'
    captures in smart/real (SOURCES.md)."""
    t, out, manifest = lab.transport(), OUT / "smart" / "lab", {}
    out.mkdir(parents=True, exist_ok=True)
    lab.nvme(True)

    def save(name, argv):
        result = t.run(argv, timeout=120, check=False, mutating=argv[2] == "-t")
        (out / name).write_text(result.stdout)
        manifest[name] = {"argv": argv, "exit": result.returncode}
        print(f"captured smart/lab/{name} ({len(result.stdout)} bytes, exit {result.returncode})")

    save("scan.json", smart.scan_argv())
    save("scan-open.json", smart.scan_argv(open_=True))
    save("sata-hdd.json", smart.read_argv("/dev/sda", "sat"))
    save("sata-ssd.json", smart.read_argv("/dev/sdb", "sat"))
    save("sata-short-test-started.json", smart.self_test_argv("/dev/sda", "short", "sat"))
    save("sata-hdd-after-short-test.json", smart.read_argv("/dev/sda", "sat"))
    save("nvme.json", smart.read_argv("/dev/nvme0", "nvme"))
    lab.monitor("qom-set /machine/peripheral/nvme1dev smart_critical_warning 4")
    save("nvme-critical-warning-4.json", smart.read_argv("/dev/nvme0", "nvme"))
    lab.monitor("qom-set /machine/peripheral/nvme1dev smart_critical_warning 0")
    save("virtio.json", smart.read_argv("/dev/vdb"))
    version = t.run(["smartctl", "--version"]).stdout.splitlines()[0]
    stamp = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    doc = {"captured_at": stamp, "smartctl": version, "guest": "lab/build.sh, QEMU disks", "files": manifest}
    (out / "MANIFEST.json").write_text(json.dumps(doc, indent=2) + "\n")


def capture_same_second_snapshots(lab, save) -> None:
    """Two snapshots of tank/data in one second (a recursive or scheduled set, a fast host): creation ties, createtxg
    does not. The emulated guest takes over a second per snapshot, so the second one is taken with the guest's clock
    set back to the first one's second, until it lands in it."""
    lab.sh("zfs snapshot tank/data@same-1")
    first = int(lab.sh("zfs get -Hpo value creation tank/data@same-1"))
    for _ in range(10):
        second = lab.sh(
            f"date -s @{first} >/dev/null && zfs snapshot tank/data@same-2 && "
            "zfs get -Hpo value creation tank/data@same-2"
        )
        if int(second) == first:
            break
        lab.sh("zfs destroy tank/data@same-2")
    else:
        raise AssertionError("the second snapshot never landed in the first one's second")
    lab.set_clock()
    save("zfs_snapshots_same_second.txt", zfs.list_snapshots_argv("tank/data", 1))


def capture(lab) -> None:
    t = lab.transport()
    version = parse_zfs_version(t.run(["zfs", "version"]).stdout)[0]
    manifest = {}
    OUT.mkdir(parents=True, exist_ok=True)

    def save(name, argv):
        result = t.run(argv, timeout=300, check=False)
        text = result.stdout if result.returncode == 0 else result.stdout + result.stderr
        (OUT / name).write_text(text)
        manifest[name] = {"argv": argv, "exit": result.returncode, "openzfs": version}
        print(f"captured {name} ({len(text)} bytes, exit {result.returncode})")

    save("lsblk_free.json", ["lsblk", "-J", "-b", "-o", disks.LSBLK_COLUMNS])  # blank disks, before any pool
    for argv in SETUP:
        t.run(argv, mutating=True, timeout=180)
    # A share, an export and a bridge on the data NIC, so their listings have something in them.
    lab.sh(
        "mkdir -p /etc/samba/tarn /tank/data/share && printf '[data]\\npath = /tank/data/share\\nread only = no\\n' "
        "> /etc/samba/tarn/shares.conf && grep -q tarn/shares.conf /etc/samba/smb.conf || "
        "printf '\\n[global]\\ninclude = /etc/samba/tarn/shares.conf\\n' >> /etc/samba/smb.conf"
    )
    lab.sh(
        "mkdir -p /etc/exports.d && echo '/tank/data 10.77.0.0/24(rw,root_squash,no_subtree_check,sync)' > /etc/exports.d/tarn.exports "
        "&& exportfs -ra"
    )
    links = json.loads(t.run(["ip", "-j", "link"]).stdout)
    nic = next(link["ifname"] for link in links if link.get("address") == lab.env["LAB_DATA_MAC"])
    nic1 = next(link["ifname"] for link in links if link.get("address") == lab.env["LAB_DATA1_MAC"])
    for argv in (  # a bridge over the second data NIC; the first keeps its address for iperf3 below
        ["ip", "link", "add", "br0", "type", "bridge"],
        ["ip", "link", "set", nic1, "master", "br0"],
        ["ip", "link", "set", "br0", "mtu", "1500", "up"],
    ):
        t.run(argv, mutating=True)
    for name, argv in CAPTURE.items():
        save(name, argv)
    capture_same_second_snapshots(lab, save)
    for name, argv in (
        ("driver", ["ethtool", "-i"]),
        ("settings", ["ethtool"]),
        ("rings", ["ethtool", "-g"]),
        ("features", ["ethtool", "-k"]),
    ):
        save(f"ethtool_{name}.txt", [*argv, nic])
    # A fio run as Tarn builds it (status every second, then the result; the per-second bandwidth log).
    t.run(["zfs", "create", "tank/bench"], mutating=True)
    job = fio.FioJob(name="randrw-8k", rw="randrw", bs="8k", size="32m", runtime=3, rwmixread=67)
    t.run(
        fio.argv(job, "/tank/bench", output="/tank/bench/result.json", bw_log="/tank/bench/bw"),
        timeout=120,
        mutating=True,
    )
    save("fio_randrw_output.txt", ["cat", "/tank/bench/result.json"])
    save("fio_bw.log", ["cat", "/tank/bench/bw_bw.1.log"])
    # An exported pool, as `zpool import` lists it (no JSON output for that in 2.3).
    t.run(["zpool", "export", "tank"], mutating=True, timeout=120)
    save("zpool_import.txt", ["zpool", "import"])
    t.run(["zpool", "import", "tank"], mutating=True, timeout=120)
    # A dRAID pool: its JSON differs (no vdev_type or state on the dRAID vdev).
    t.run(["zpool", "destroy", "tank"], mutating=True, timeout=120)
    t.run(["zpool", "create", "-f", "dpool", "draid1", D(1), D(2), D(3)], mutating=True, timeout=120)
    save("zpool_status_draid.json", ["zpool", "status", "-j", "--json-int", "-P"])
    t.run(["zpool", "destroy", "dpool"], mutating=True, timeout=120)
    # iperf3 runs from this machine (the peer on the data link) to a server in the guest.
    t.run(["iperf3", "-s", "-D", "-1"], mutating=True)
    time.sleep(1)
    guest_ip = lab.env["LAB_GUEST_DATA_ADDR"].split("/")[0]
    iperf = subprocess.run(["iperf3", "-c", guest_ip, "-t", "3", "-J"], capture_output=True, text=True, timeout=60)
    (OUT / "iperf3.json").write_text(iperf.stdout)
    manifest["iperf3.json"] = {
        "argv": ["iperf3", "-c", guest_ip, "-t", "3", "-J"],
        "exit": iperf.returncode,
        "openzfs": version,
        "where": "this machine, the data link's peer",
    }
    # Routes an admin added by hand beside the kernel's, DHCP's and RA's (what a network change's restore puts back).
    lab.sh(
        f"ip -6 addr add fd77::2/64 dev {nic} nodad && ip route add 10.99.0.0/24 via 10.77.0.1 dev {nic} && "
        f"ip route add 10.98.0.0/24 dev {nic} src 10.77.0.2 && ip -6 route add fd99::/64 via fd77::1 dev {nic}"
    )
    save("ip_route_4.json", ["ip", "-4", "-j", "route", "show"])
    save("ip_route_6.json", ["ip", "-6", "-j", "route", "show"])
    save("ip_addr_with_routes.json", ["ip", "-j", "-d", "-s", "addr", "show"])
    # A bond of the two data NICs with a VLAN on it, made as Tarn makes them (networkd kept off them as Tarn does).
    lab.sh(f"ip link del br0 && ip addr flush dev {nic} scope global")
    hold = net.hold_path(0)
    lab.sh(
        f"mkdir -p {net.HOLD_DIR} && printf '[Match]\\nName=bond0 bond0.42 {nic} {nic1}\\n\\n[Link]\\nUnmanaged=yes\\n' > {hold}"
    )
    lab.sh("networkctl reload")
    ports = sorted((x for x in net.read_links(t, details=False) if x.name in (nic, nic1)), key=lambda x: x.name)
    ports[0].addresses = [net.static_address("10.77.0.2/24")]  # the guest's data address, flushed above
    bond = net.Link("bond0", "bond", ports[0].mac, 1500, None, None, "UP", True)
    apply = net.bond_lines("bond0", ports, net.BondOptions())[0]
    apply += net.vlan_lines(bond, 42, "bond0.42", ["10.79.42.2/24"])[0]
    net.run_batch(t, "/run/tarn/capture.ip", apply)
    time.sleep(2)
    save("ip_addr_bond_vlan.json", ["ip", "-j", "-d", "-s", "addr", "show"])
    (OUT / "MANIFEST.json").write_text(
        json.dumps(
            {
                "captured_at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
                "openzfs": version,
                "guest": "lab/build.sh (Debian 12, bookworm-backports)",
                "files": manifest,
            },
            indent=2,
        )
        + "\n"
    )
    t.close()


if __name__ == "__main__":
    import django

    django.setup()
    main()
