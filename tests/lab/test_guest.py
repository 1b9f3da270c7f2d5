"""The lab guest is real: OpenZFS 2.3 with JSON output, Samba, nfsd, a jumbo-frame data link, iperf3."""

import hashlib
import json
import subprocess
import time

import pytest

from appliance.connect import transport_for
from appliance.services import host_refresh_facts
from hostlib.errors import CommandFailed
from tests.conftest import require_tool

pytestmark = [pytest.mark.lab, pytest.mark.lane(1)]
DISK = "/dev/disk/by-id/virtio-zfsdisk{}"


def test_the_guest_runs_openzfs_2_3_with_json_output(lab_host):
    host = host_refresh_facts(host=lab_host)
    assert host.facts_error == ""
    assert host.facts["zfs_version"].startswith("2.3."), host.facts
    assert host.facts["zfs_json"] is True
    assert all(host.facts["tools"].values()), host.facts["tools"]
    status = json.loads(transport_for(host).run(["zpool", "status", "-j", "--json-int"]).stdout)
    assert status["output_version"]["command"] == "zpool status"


def pools(transport) -> dict:
    return json.loads(transport.run(["zpool", "status", "-j", "--json-int"]).stdout)["pools"]


def test_a_pool_made_by_a_test_is_gone_after_reset(guest):
    t = guest.transport()
    t.run(["zpool", "create", "-f", "tank", "mirror", DISK.format(1), DISK.format(2)], mutating=True, timeout=120)
    assert pools(t)["tank"]["state"] == "ONLINE"
    t.close()
    seconds = guest.reset()
    t = guest.transport()
    assert pools(t) == {}
    importable = t.run(["zpool", "import"], check=False)
    assert "no pools available" in importable.stdout + importable.stderr  # the disks' labels went too
    t.close()
    assert seconds < 60


def test_smbd_in_the_guest_serves_a_share_this_machines_smbclient_reads_and_writes(guest, tmp_path):
    smbclient = require_tool("smbclient")
    guest.sh(
        "mkdir -p /srv/lab && chmod 777 /srv/lab && (id labuser || useradd -M labuser) >/dev/null && "
        "printf 'labpass\\nlabpass\\n' | smbpasswd -s -a labuser && "
        "printf '[lab]\\npath = /srv/lab\\nread only = no\\nvalid users = labuser\\n' >> /etc/samba/smb.conf && "
        "systemctl restart smbd"
    )
    payload = tmp_path / "up.bin"
    payload.write_bytes(bytes(range(256)) * 4096)
    argv = [
        smbclient,
        "//127.0.0.1/lab",
        "-p",
        guest.env["LAB_SMB_PORT"],
        "-U",
        "labuser%labpass",
        "-m",
        "SMB3",
        "-c",
        f"put {payload} up.bin; get up.bin {tmp_path / 'down.bin'}",
    ]
    for _ in range(20):  # smbd takes a moment after restart under emulation
        result = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        if result.returncode == 0:
            break
        time.sleep(1)
    assert result.returncode == 0, result.stdout + result.stderr
    assert (tmp_path / "down.bin").read_bytes() == payload.read_bytes()
    assert guest.sh("sha256sum /srv/lab/up.bin").split()[0] == hashlib.sha256(payload.read_bytes()).hexdigest()


def test_an_nfs_export_in_the_guest_is_mounted_and_a_file_round_trips(guest):
    guest.sh(
        "mkdir -p /srv/nfs /mnt/nfs /etc/exports.d && echo '/srv/nfs 127.0.0.1(rw,no_root_squash,no_subtree_check)' "
        "> /etc/exports.d/lab.exports && systemctl restart nfs-server && exportfs -ra"
    )
    guest.sh("mount -t nfs -o vers=4.2 127.0.0.1:/srv/nfs /mnt/nfs && echo round-trip > /mnt/nfs/f && sync")
    assert guest.sh("cat /srv/nfs/f").strip() == "round-trip"
    assert "127.0.0.1:/srv/nfs" in guest.sh("findmnt -n -o SOURCE /mnt/nfs")
    assert guest.sh("cat /mnt/nfs/f").strip() == "round-trip"


def data_nic(transport, mac: str) -> str:
    links = json.loads(transport.run(["ip", "-j", "link"]).stdout)
    return next(link["ifname"] for link in links if link.get("address") == mac)


def test_the_data_link_reaches_this_machine_and_iperf3_runs_over_it(guest):
    """The lab's plumbing: the guest's first data NIC has its address from the guest's own networkd and this machine
    is its peer; the client behind the second NIC is out of reach until the guest bridges them (test_tuning)."""
    require_tool("iperf3")
    t = guest.transport()
    nic = data_nic(t, guest.env["LAB_DATA_MAC"])
    guest_ip = guest.env["LAB_GUEST_DATA_ADDR"].split("/")[0]
    assert guest.env["LAB_GUEST_DATA_ADDR"] in t.run(["ip", "-br", "addr", "show", "dev", nic]).stdout
    ping = subprocess.run(["ping", "-c", "2", "-W", "3", guest_ip], capture_output=True, text=True, timeout=30)
    assert ping.returncode == 0, ping.stdout + ping.stderr
    t.run(["iperf3", "-s", "-D", "-1"], mutating=True)
    time.sleep(1)
    run = subprocess.run(["iperf3", "-c", guest_ip, "-t", "3", "-J"], capture_output=True, text=True, timeout=60)
    result = json.loads(run.stdout)
    assert result["end"]["sum_received"]["bytes"] > 0
    assert result["end"]["sum_received"]["bits_per_second"] > 1e6
    client = guest.env["LAB_NS_ADDR"].split("/")[0]
    assert subprocess.run(["ping", "-c", "1", "-W", "2", client], capture_output=True, timeout=30).returncode != 0
    t.close()


def test_the_management_nic_is_not_the_data_nic(guest):
    t = guest.transport()
    with pytest.raises(CommandFailed):
        t.run(["ip", "link", "show", "dev", "does-not-exist"])
    assert data_nic(t, guest.env["LAB_DATA_MAC"]) != data_nic(t, "52:54:00:12:34:56")
    t.close()
