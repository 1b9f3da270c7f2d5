"""Issue 41, item 4, on the lab guest (Debian 12, zfs 2.3 built by DKMS for its kernel, whose DKMS sources were
removed after the build): its apt points at a repository served from this machine with a newer kernel (its image
and the metapackage that pulls it in) and a tool in a new version. The check sees them, security and kernel marked;
the guard refuses the new kernel (no zfs module would be built for it) and holds it; the update installs the rest
and the kernel never reaches /boot; the pools stay. dpkg cut short mid-update is repaired (dpkg --configure -a)
before anything else. The reboot comes back with the pool imported and the passphrase root still locked."""

import re

import pytest

from appliance.models import Operation
from tests.support import debrepo
from tests.support.lab import close_shared_connections
from updates import services
from updates.models import HostUpdates

pytestmark = pytest.mark.lab
META = "linux-image-amd64"
IMAGE = f"linux-image-{debrepo.KERNEL}"


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    folder = debrepo.build(tmp_path_factory.mktemp("debrepo"))
    with debrepo.served(folder) as line:
        yield folder, line


@pytest.fixture
def pointed(guest, repo):
    """The guest's apt reads this machine's repository only (its own sources set aside: the guest is restored
    after the test), with the tool's 1.0 installed."""
    folder, line = repo
    guest.sh(
        "mkdir -p /root/sources.off && mv /etc/apt/sources.list.d/* /root/sources.off/ 2>/dev/null; "
        "rm -f /etc/apt/sources.list; "
        f"echo '{line}' > /etc/apt/sources.list.d/tarn-test.list && apt-get update -q >/dev/null && "
        f"DEBIAN_FRONTEND=noninteractive apt-get install -y -q {debrepo.TOOL}=1.0 >/dev/null",
        timeout=300,
    )
    return guest


def _version(guest, package: str) -> str:
    return guest.sh(f"dpkg-query -W -f='${{Version}}' {package}").strip()


def test_a_kernel_without_its_zfs_module_is_held_the_rest_installs_and_the_reboot_reports_the_locked_roots(
    pointed, lab_host, run_queued, admin_user
):
    guest = pointed
    running = guest.sh("uname -r").strip()
    guest.sh(
        "zpool create -f tank /dev/disk/by-id/virtio-zfsdisk1 && "
        "printf 'correct horse battery staple' | zfs create -o encryption=on -o keyformat=passphrase tank/secret"
    )
    op = run_queued(services.updates_check_start, host=lab_host, user=admin_user)
    assert op.status == "succeeded", (op.message, op.log)
    row = HostUpdates.objects.get(host=lab_host)
    found = {p["name"]: p for p in row.pending}
    assert set(found) == {debrepo.TOOL, META, IMAGE}, found
    assert found[IMAGE]["kernel"] == debrepo.KERNEL and found[IMAGE]["old"] == ""
    assert found[IMAGE]["origins"] == ["Tarn-Test-Security:1/tarn-test-security"] and found[IMAGE]["security"]
    assert found[debrepo.TOOL]["old"] == "1.0" and found[debrepo.TOOL]["new"] == "2.0"
    verdicts = {v["release"]: v for v in row.guard["verdicts"]}
    assert verdicts[running]["ok"] and verdicts[running]["module"], "the running kernel has its module"
    assert not verdicts[debrepo.KERNEL]["ok"] and "no zfs module is built for it" in verdicts[debrepo.KERNEL]["why"]
    assert row.guard["hold"] == [IMAGE, META]

    op = run_queued(services.updates_apply_start, host=lab_host, user=admin_user)
    assert op.status == "succeeded", (op.message, op.log)
    assert f"held {IMAGE}, {META}: no zfs module is built for it" in op.message, op.message
    assert _version(guest, debrepo.TOOL) == "2.0", "the rest installed"
    assert guest.sh(f"cat /usr/share/{debrepo.TOOL}/version").strip() == "2.0"
    assert set(guest.sh("apt-mark showhold").split()) >= {IMAGE, META}
    assert guest.sh(f"ls /boot | grep -c -- '{debrepo.KERNEL}' || true").strip() == "0", "the kernel never came"
    assert "Setting up tarn-test-tool (2.0)" in op.log, "apt's log is kept"
    log = re.search(rf"its output in (/var/log/tarn-updates-{op.pk}-[0-9]+\.log)", op.log)[1]
    assert "Setting up tarn-test-tool (2.0)" in guest.sh(f"cat {log}"), "and on the host, whole"
    assert guest.sh("systemctl list-units --no-legend --all 'tarn-updates-*'").strip() == "", "the unit is unloaded"
    row = HostUpdates.objects.get(host=lab_host)
    assert row.boot["ok"] is True and [v["release"] for v in row.boot["verdicts"]] == [running]
    assert [p["name"] for p in row.pending] == [], "what is left is held"

    boot = guest.sh("cat /proc/sys/kernel/random/boot_id").strip()
    op = run_queued(services.updates_reboot_start, host=lab_host, user=admin_user, confirm="lab")
    close_shared_connections()
    assert op.status == "succeeded", (op.message, op.log)
    assert guest.sh("cat /proc/sys/kernel/random/boot_id").strip() != boot, "it did reboot"
    assert f"on {running}: pools tank imported" in op.message
    assert op.message.endswith("encryption roots still locked: tank/secret (unlock them on the Encryption page)")
    assert guest.sh("zfs get -H -o value keystatus tank/secret").strip() == "unavailable"


def test_dpkg_cut_short_is_repaired_before_anything_else(pointed, lab_host, run_queued, admin_user):
    guest = pointed
    # unpacked from the repository, never configured: an update cut short
    guest.sh(
        f"cd /tmp && apt-get download -q {debrepo.TOOL}=2.0 >/dev/null 2>&1 && dpkg --unpack /tmp/{debrepo.TOOL}_2.0_all.deb"
    )
    assert guest.sh("dpkg --audit").strip(), "dpkg says it was cut short"
    run_queued(services.updates_check_start, host=lab_host, user=admin_user)
    assert HostUpdates.objects.get(host=lab_host).interrupted
    op = run_queued(services.updates_apply_start, host=lab_host, user=admin_user)
    assert op.status == "succeeded", (op.message, op.log)
    assert "dpkg --configure -a: as the unit tarn-repair-" in op.log
    assert op.log.index("tarn-repair-") < op.log.index("guard:"), "the repair came first"
    assert guest.sh("dpkg --audit").strip() == "" and _version(guest, debrepo.TOOL) == "2.0"
    assert not Operation.objects.filter(kind="updates.apply", status="failed").exists()
