"""Issue 41, item 4: a host's updates on a FakeHost (apt's simulation as captured on a Debian 12 machine, the zfs
version as captured in the lab guest; nothing runs: the lab proves the effects). The check keeps what apt would
install with its flags and the guard's verdicts; the update repairs an interrupted dpkg first, holds the kernel the
guard refuses, runs apt as a unit on the host with its log kept, and asks the guard again over /boot; two updates
on one host are refused; the page shows it all to admins only."""

import re
from pathlib import Path

import pytest
from django.core.exceptions import ValidationError

from appliance.models import Host, Operation
from appliance.operations import TargetBusy
from tests.support.runners import FakeHost, captured
from updates import services
from updates.models import HostUpdates

pytestmark = pytest.mark.django_db
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "host" / "updates"
NOW_KERNEL, NEW_KERNEL = "6.1.0-56-amd64", "6.1.0-57-amd64"
ZFS = captured("zfs_module_version.txt").strip()  # the lab guest's module: 2.3.2-2~bpo12+2
SIMULATE = ("apt-get", "-s", "-o", "Debug::NoLocking=1", "full-upgrade")
BOOT = ("find", "-P", "/boot")
DONE = "LoadState=loaded\nActiveState=active\nSubState=exited\nResult=success\n"  # RemainAfterExit, succeeded
FAILED = "LoadState=loaded\nActiveState=failed\nSubState=failed\nResult=exit-code\n"


@pytest.fixture
def nas(db):
    return Host.objects.create(name="nas1", address="10.0.0.5", facts={"zfs_version": f"zfs-{ZFS}"})


@pytest.fixture
def fake(monkeypatch):
    """The lab guest's case: 6.1.0-56 with zfs built by DKMS, whose sources are gone; a new kernel on offer."""
    host = FakeHost().install(monkeypatch)
    host.answer(*SIMULATE, stdout=(FIXTURES / "apt_install_kernel.txt").read_text())
    host.answer(*BOOT, stdout=f"vmlinuz-{NOW_KERNEL}\n")
    host.answer("modinfo", "-k", NOW_KERNEL, stdout=f"{ZFS}\n")
    host.answer("modinfo", "-k", NEW_KERNEL, returncode=1, stderr="modinfo: ERROR: Module zfs not found.\n")
    host.answer("find", "-P", "/usr/src", "-maxdepth", "1", stdout=f"linux-headers-{NOW_KERNEL}\n")
    host.answer("systemctl", "show", stdout=DONE)

    def held(argv):  # as apt does: a held package is kept back, the rest still comes
        names = set(argv[argv.index("--") + 1 :])
        text = next(r.stdout for r in reversed(host.rules) if r.prefix == SIMULATE)
        kept = [line for line in text.splitlines() if not (line[:5] in ("Inst ", "Conf ") and line.split()[1] in names)]
        host.answer(*SIMULATE, stdout="\n".join(kept) + "\n")

    host.on("apt-mark", "hold", call=held)
    return host


def test_a_check_keeps_what_apt_would_install_and_the_guards_verdicts(fake, nas, run_queued, admin_user):
    op = run_queued(services.updates_check_start, host=nas, user=admin_user)
    assert op.status == "succeeded", op.message
    assert fake.mutations == [["apt-get", "update", "-q"]], "a check changes nothing but the package lists"
    row = HostUpdates.objects.get(host=nas)
    names = [p["name"] for p in row.pending]
    inst = [
        line.split()[1]
        for line in (FIXTURES / "apt_install_kernel.txt").read_text().splitlines()
        if line[:5] == "Inst "
    ]
    assert names == inst and len(names) == 28, "every Inst line, in apt's order"
    image = next(p for p in row.pending if p["name"] == f"linux-image-{NEW_KERNEL}")
    assert image == {
        "name": f"linux-image-{NEW_KERNEL}",
        "old": "",
        "new": "6.1.192-3",
        "origins": ["Debian-Security:12/oldstable-security"],
        "security": True,
        "kernel": NEW_KERNEL,
        "zfs": False,
    }
    assert row.guard["ok"] is False and row.guard["hold"] == [f"linux-image-{NEW_KERNEL}", "linux-image-amd64"]
    assert [(v["release"], v["ok"]) for v in row.guard["verdicts"]] == [(NOW_KERNEL, True), (NEW_KERNEL, False)]
    assert f"kernel: linux-image-{NEW_KERNEL}" in op.message and "the guard would hold" in op.message


def test_an_update_repairs_dpkg_first_holds_the_refused_kernel_and_runs_apt_as_a_unit(
    fake, nas, run_queued, admin_user
):
    run_queued(services.updates_check_start, host=nas, user=admin_user)
    fake.reset()
    fake.answer("dpkg", "--audit", stdout="The following packages are only half configured:\n zfs-zed\n")
    fake.answer("tail", "-c", stdout="Unpacking cpio (2.13+dfsg-7.1) ...\nSetting up cpio (2.13+dfsg-7.1) ...\n")
    op = run_queued(services.updates_apply_start, host=nas, user=admin_user)
    assert op.status == "succeeded", (op.message, op.log)
    units = [a for a in fake.mutations if a[0] == "systemd-run"]
    repair, upgrade = units
    assert repair[1].startswith(f"--unit=tarn-repair-{op.pk}-") and repair[-3:] == ["dpkg", "--configure", "-a"]
    assert "--setenv=DEBIAN_FRONTEND=noninteractive" in upgrade and "--setenv=LC_ALL=C" in upgrade
    unit = upgrade[1].removeprefix("--unit=")
    assert f"--property=StandardOutput=truncate:/var/log/{unit}.log" in upgrade
    assert "--property=RemainAfterExit=yes" in upgrade
    assert ["systemctl", "reset-failed", "--", f"{unit}.service"] in fake.mutations, "unloaded once read"
    assert upgrade[upgrade.index("--") + 1 :] == [
        "apt-get", "-y", "-q", "-o", "DPkg::Lock::Timeout=300", "-o", "Dpkg::Options::=--force-confdef",
        "-o", "Dpkg::Options::=--force-confold", "full-upgrade",
    ]  # fmt: skip
    order = [a[:2] for a in fake.mutations]
    hold = ["apt-mark", "hold", "--", f"linux-image-{NEW_KERNEL}", "linux-image-amd64"]
    assert hold in fake.mutations
    assert (
        order.index(repair[:2]) < order.index(["apt-get", "update"]) < order.index(hold[:2]) < order.index(upgrade[:2])
    )
    assert f"held linux-image-{NEW_KERNEL}, linux-image-amd64: no zfs module is built for it" in op.message
    assert "guard: 6.1.0-57-amd64: refused: no zfs module is built for it and DKMS has no zfs 2.3.2" in op.log
    assert "Setting up cpio (2.13+dfsg-7.1) ..." in op.log, "apt's log kept"
    row = HostUpdates.objects.get(host=nas)
    assert row.boot["ok"] is True and row.boot["verdicts"][0]["release"] == NOW_KERNEL


def test_a_failed_apt_fails_the_update_with_the_end_of_its_log(fake, nas, run_queued, admin_user):
    run_queued(services.updates_check_start, host=nas, user=admin_user)
    fake.answer("systemctl", "show", stdout=FAILED)
    fake.answer(
        "tail", "-c", stdout="Setting up zfs-zed ...\nE: Sub-process /usr/bin/dpkg returned an error code (1)\n"
    )
    op = run_queued(services.updates_apply_start, host=nas, user=admin_user)
    assert op.status == "failed"
    assert op.message.startswith("apt-get failed: Setting up zfs-zed ... / E: Sub-process /usr/bin/dpkg returned")
    assert re.search(rf"\(the whole log: /var/log/tarn-updates-{op.pk}-[0-9]+\.log\)$", op.message), op.message


def test_after_the_update_a_kernel_in_boot_without_its_module_means_do_not_reboot(fake, nas, run_queued, admin_user):
    run_queued(services.updates_check_start, host=nas, user=admin_user)
    fake.answer(*BOOT, stdout=f"vmlinuz-{NOW_KERNEL}\nvmlinuz-{NEW_KERNEL}\n")  # it came in anyway (held too late)
    op = run_queued(services.updates_apply_start, host=nas, user=admin_user)
    assert op.status == "succeeded", op.message
    assert f"do not reboot: {NEW_KERNEL}: it has no zfs module: booted, no pool would import" in op.message
    assert HostUpdates.objects.get(host=nas).boot["ok"] is False


def test_two_updates_on_one_host_and_an_update_before_a_check_are_refused(nas, admin_user, fake):
    with pytest.raises(Exception) as caught:
        services.updates_apply_start(host=nas, user=admin_user)
    assert caught.value.message_dict["host"] == ["Check nas1 for updates first: Tarn shows what it would install."]
    HostUpdates.objects.create(host=nas, checked_at="2026-11-29T12:00:00Z")
    services.updates_apply_start(host=nas, user=admin_user)
    with pytest.raises(TargetBusy):
        services.updates_apply_start(host=nas, user=admin_user)
    with pytest.raises(TargetBusy):
        services.updates_check_start(host=nas, user=admin_user)
    assert Operation.objects.count() == 1


def test_the_page_shows_the_guard_and_the_pending_packages(fake, nas, run_queued, admin_user, admin_client):
    admin_client.post("/hosts/switch/", {"host": nas.pk})
    assert "Not checked yet" in admin_client.get("/updates/").content.decode()
    run_queued(services.updates_check_start, host=nas, user=admin_user)
    page = admin_client.get("/updates/").content.decode()
    assert "no zfs module is built for it and DKMS has no zfs 2.3.2 source" in page
    assert f"<code>linux-image-{NEW_KERNEL}</code>" in page and "(new)" in page and "security" in page
    assert page.index(f"<code>linux-image-{NEW_KERNEL}</code>") < page.index("<code>cpio</code>"), "kernels first"


BOOT_ID = ("cat", "--", "/proc/sys/kernel/random/boot_id")


@pytest.fixture
def rebootable(fake, nas, run_queued, admin_user, monkeypatch):
    """Updated, the guard fine over /boot; the host answers a new boot id once `systemctl reboot` ran."""
    monkeypatch.setattr("updates.services.POLL_SECONDS", 0.01)
    run_queued(services.updates_check_start, host=nas, user=admin_user)
    run_queued(services.updates_apply_start, host=nas, user=admin_user)
    fake.answer(*BOOT_ID, stdout="11111111-aaaa\n")
    fake.answer("zpool", "list", stdout="tank\nbackup\n")
    fake.answer("zfs", "list", stdout="tank\t-\t-\ntank/k\ttank/k\tavailable\n")
    fake.answer("uname", "-r", stdout=f"{NOW_KERNEL}\n")

    def rebooted(_argv):
        fake.answer(*BOOT_ID, stdout="22222222-bbbb\n")
        fake.answer("zfs", "list", stdout="tank\t-\t-\ntank/k\ttank/k\tunavailable\n")

    fake.on("systemctl", "reboot", call=rebooted)
    return fake


def test_the_reboot_waits_for_the_host_and_reports_its_pools_and_the_locked_roots(
    rebootable, nas, run_queued, admin_user
):
    op = run_queued(services.updates_reboot_start, host=nas, user=admin_user, confirm="nas1")
    assert op.status == "succeeded", (op.message, op.log)
    assert ["systemctl", "reboot"] in rebootable.mutations
    assert op.message.startswith(f"Back after 0 s on {NOW_KERNEL}: pools tank, backup imported; ")
    assert op.message.endswith("encryption roots still locked: tank/k (unlock them on the Encryption page)")


def test_a_pool_missing_after_the_reboot_fails_it(rebootable, nas, run_queued, admin_user):
    rebootable.on("systemctl", "reboot", call=lambda _argv: rebootable.answer("zpool", "list", stdout="tank\n"))
    op = run_queued(services.updates_reboot_start, host=nas, user=admin_user, confirm="nas1")
    assert op.status == "failed" and op.message.endswith("; NOT imported: backup"), op.message


def test_no_reboot_without_the_name_typed_or_with_a_kernel_lacking_its_module(fake, nas, run_queued, admin_user):
    with pytest.raises(ValidationError) as caught:
        services.updates_reboot_start(host=nas, user=admin_user, confirm="nas1")
    assert "Install the updates on nas1 first" in caught.value.message_dict["host"][0]
    run_queued(services.updates_check_start, host=nas, user=admin_user)
    fake.answer(*BOOT, stdout=f"vmlinuz-{NOW_KERNEL}\nvmlinuz-{NEW_KERNEL}\n")
    run_queued(services.updates_apply_start, host=nas, user=admin_user)
    with pytest.raises(ValidationError) as caught:
        services.updates_reboot_start(host=nas, user=admin_user, confirm="nas")
    assert caught.value.message_dict["confirm"] == ["Type nas1 to reboot it."]
    with pytest.raises(ValidationError) as caught:
        services.updates_reboot_start(host=nas, user=admin_user, confirm="nas1")
    assert "Not offered: a kernel in /boot has no ZFS module" in caught.value.message_dict["host"][0]
    assert not Operation.objects.filter(kind="updates.reboot").exists()


def test_an_update_still_running_on_the_host_holds_back_the_next_check_and_update(fake, nas, run_queued, admin_user):
    fake.answer("systemctl", "list-units", stdout="tarn-updates-7-123 loaded active running Tarn: apt-get -y -q\n")
    op = run_queued(services.updates_check_start, host=nas, user=admin_user)
    assert op.status == "failed" and op.message.startswith("An update is still running on nas1 as tarn-updates-7-123")
    assert fake.mutations == []


def test_a_unit_systemd_stops_telling_about_fails_the_update_and_is_left_to_the_next_one(
    fake, nas, run_queued, admin_user, monkeypatch
):
    monkeypatch.setattr("updates.services.POLL_SECONDS", 0)
    monkeypatch.setattr("updates.services.UNKNOWN_MAX", 3)
    run_queued(services.updates_check_start, host=nas, user=admin_user)
    fake.answer("systemctl", "show", returncode=1, stderr="Failed to get properties: Connection timed out\n")
    op = run_queued(services.updates_apply_start, host=nas, user=admin_user)
    assert op.status == "failed" and op.message.startswith("Lost track of tarn-updates-"), op.message
    assert "the next update waits for it to end" in op.message


def test_apt_removing_a_zfs_package_is_refused_before_anything_is_installed(fake, nas, run_queued, admin_user):
    text = (FIXTURES / "apt_install_kernel.txt").read_text() + "Remv zfsutils-linux [2.3.2-2~bpo12+2]\n"
    fake.answer(*SIMULATE, stdout=text)
    run_queued(services.updates_check_start, host=nas, user=admin_user)
    op = run_queued(services.updates_apply_start, host=nas, user=admin_user)
    assert op.status == "failed" and op.message.startswith("apt would remove zfsutils-linux: refused"), op.message
    assert not [a for a in fake.mutations if a[0] == "systemd-run"]


def test_an_update_or_a_check_without_a_host_names_the_field(admin_user):
    for start in (services.updates_check_start, services.updates_apply_start):
        with pytest.raises(ValidationError) as caught:
            start(host=None, user=admin_user)
        assert "Add a host first" in caught.value.message_dict["host"][0]


def test_a_rollout_updates_one_host_after_another_and_the_first_failure_stops_it(fake, run_queued, admin_user):
    hosts = [Host.objects.create(name=f"nas{i}", address=f"10.0.0.{i}") for i in (1, 2, 3)]
    for host in hosts:
        run_queued(services.updates_check_start, host=host, user=admin_user)
    fake.opened.clear()
    upgrades = []

    def started(argv):
        if any(a.startswith("--unit=tarn-updates-") for a in argv):
            upgrades.append(argv)
            if len(upgrades) == 2:  # the second host's apt fails
                fake.answer("systemctl", "show", stdout=FAILED)

    fake.on("systemd-run", call=started)
    op = run_queued(services.updates_rollout_start, user=admin_user, hosts=hosts)
    assert op.status == "failed", op.message
    assert op.message.startswith("Stopped at nas2 (2 of 3): apt-get failed") and op.message.endswith(
        "not updated: nas3"
    )
    assert {name for name, _ in fake.opened} == {"nas1", "nas2"}, "nas3 was never reached"
    assert "nas1: Installed" in op.log and "nas1: guard: 6.1.0-57-amd64: refused" in op.log


def test_a_rollout_whose_canary_succeeds_goes_on_and_says_so(fake, run_queued, admin_user):
    hosts = [Host.objects.create(name=f"nas{i}", address=f"10.0.0.{i}") for i in (1, 2)]
    for host in hosts:
        run_queued(services.updates_check_start, host=host, user=admin_user)
    op = run_queued(services.updates_rollout_start, user=admin_user, hosts=hosts)
    assert op.status == "succeeded", (op.message, op.log)
    assert op.message == "Updated nas1, nas2 one at a time (nas1 first, as the canary)"
    assert op.host is None and op.target == "tarn:updates"


def test_a_rollout_needs_checked_hosts_that_tarn_may_change(nas, admin_user, fake):
    other = Host.objects.create(name="nas2", address="10.0.0.2", read_only=True)
    with pytest.raises(ValidationError) as caught:
        services.updates_rollout_start(user=admin_user, hosts=[nas, other])
    assert caught.value.message_dict["hosts"] == ["Check nas1, nas2 for updates first."]
    for host in (nas, other):
        HostUpdates.objects.create(host=host, checked_at="2026-11-29T12:00:00Z")
    with pytest.raises(ValidationError) as caught:
        services.updates_rollout_start(user=admin_user, hosts=[nas, other])
    assert caught.value.message_dict["hosts"] == ["nas2: read-only in Tarn, nothing is changed there."]
    with pytest.raises(ValidationError) as caught:
        services.updates_rollout_start(user=admin_user, hosts=[])
    assert "Choose the hosts" in caught.value.message_dict["hosts"][0]
    assert not Operation.objects.exists()
