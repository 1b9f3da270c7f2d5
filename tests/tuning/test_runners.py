"""The tuning runners without the lab: a FakeHost answers with output captured from the lab guest and records every
command and file, so each test asserts what a plan reads, what an apply writes (runtime values, sysctl.d,
modprobe.d, the `ip -batch` scripts, the armed restore), what Keep and revert do, and the change set's status at
each step."""

import json
from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone

from appliance.choices import Role
from appliance.models import Operation, User
from hostlib import kernel
from hostlib.errors import HostError, HostUnreachable
from tests.support.runners import FakeHost, captured
from tuning.models import ChangeSet, KernelState, Link, Setting
from tuning.services import (
    bridge_create_start,
    bridge_delete_start,
    change_keep_start,
    change_revert_start,
    changes_settle,
    kernel_refresh,
    link_mtu_start,
    links_refresh,
    network_revert_start,
    setting_start,
    tuning_apply_start,
    tuning_plan_start,
    tuning_revert_start,
)

HEADER = kernel.HEADER
NETWORKD_HEADER = "# Written by Tarn from its database; edits here are replaced on the next change.\n"
LAN_10G_SET = {  # lan10g against the lab guest's values: key → (original, value set)
    "net.core.netdev_max_backlog": ("1000", "30000"),
    "net.core.rmem_max": ("212992", "134217728"),
    "net.core.wmem_max": ("212992", "134217728"),
    "net.ipv4.tcp_mtu_probing": ("0", "1"),
    "net.ipv4.tcp_rmem": ("4096 131072 6291456", "4096 131072 67108864"),
    "net.ipv4.tcp_slow_start_after_idle": ("1", "0"),
    "net.ipv4.tcp_wmem": ("4096 16384 4194304", "4096 65536 67108864"),
    "vm.swappiness": ("60", "10"),
}


@pytest.fixture
def admin(db):
    """An admin with no password hash (nobody logs in here; hashing costs a second a test)."""
    return User.objects.create_user("alice", password=None, role=Role.ADMIN)


@pytest.fixture
def fake(local_host, monkeypatch):
    """The lab guest as a FakeHost behind every transport the tuning runners open, with the inventory mirror (links,
    kernel values) read from it; the calls list starts empty."""
    host = FakeHost().install(monkeypatch)
    links_refresh(host=local_host, t=host.transport())
    kernel_refresh(host=local_host, t=host.transport())
    host.reset()
    return host


def field_of(exc_info) -> dict:
    return exc_info.value.message_dict


def links_after(*, mtu: dict | None = None, unbridged: str = "") -> str:
    """The captured `ip -j -d -s addr show` as the guest prints it after a change: MTUs set, a bridge gone."""
    raw = json.loads(captured("ip_addr_details.json"))
    for link in raw:
        link["mtu"] = (mtu or {}).get(link["ifname"], link["mtu"])
        if unbridged and link.get("master") == unbridged:
            del link["master"]
    return json.dumps([x for x in raw if x["ifname"] != unbridged])


def planned(run_queued, fake, host, user, profile="lan10g") -> ChangeSet:
    cs = run_queued(tuning_plan_start, host=host, user=user, profile=profile)
    fake.reset()
    return cs


# --- plan ------------------------------------------------------------------------------------------------------------


def test_a_plan_reads_the_host_read_only_and_lists_what_it_would_set(run_queued, fake, local_host, admin):
    fake.answer("nproc", stdout="4\n")
    cs = run_queued(tuning_plan_start, host=local_host, user=admin, profile="lan10g")
    assert cs.status == "planned" and cs.ended_at is not None
    assert fake.opened == [("local", True)] and all(c.read_only for c in fake.calls) and not fake.mutations
    read_in_profile_order = (
        "net.core.rmem_max net.core.wmem_max net.ipv4.tcp_rmem net.ipv4.tcp_wmem net.ipv4.tcp_mtu_probing "
        "net.ipv4.tcp_slow_start_after_idle net.core.netdev_max_backlog vm.swappiness"
    ).split()
    assert fake.argvs == [
        ["sysctl", "--", *read_in_profile_order],
        ["modinfo", "-F", "name", "--", "sch_fq"],
        ["modinfo", "-F", "name", "--", "tcp_bbr"],
        ["which", "smbd", "exportfs"],
        ["nproc"],
    ]
    rows = {s.key: (s.action, s.original, s.value, s.note) for s in cs.settings.all()}
    assert rows == {
        **{k: ("set", was, now, "") for k, (was, now) in LAN_10G_SET.items()},
        "net.ipv4.tcp_rmem": (
            "set",
            "4096 131072 6291456",
            "4096 131072 67108864",
            "Raised to 4096 131072 67108864: no part is lowered.",
        ),
        "smb_min_protocol": ("same", "SMB2", "SMB2", "Already set."),
        "smb_multichannel": ("skip", "no", "yes", "Samba is not installed here."),
        "nfs_threads": ("skip", "8", "4", "The NFS server is not installed here."),
    }
    assert not Setting.objects.filter(active=True).exists()
    assert cs.operation.status == "succeeded"
    assert Operation.objects.get(pk=cs.operation_id).message == (
        "Plan ready: 8 settings would change; nothing changed yet."
    )


def test_a_plan_skips_what_the_kernel_lacks_never_lowers_and_sizes_nfsd_to_the_cores(
    run_queued, fake, local_host, admin
):
    del fake.sysctl["vm.swappiness"]
    fake.sysctl["net.core.rmem_max"] = "268435456"
    fake.answer(
        "modinfo", "-F", "name", "--", "tcp_bbr", returncode=1, stderr="modinfo: ERROR: Module tcp_bbr not found."
    )
    fake.answer("which", stdout="/usr/sbin/smbd\n/usr/sbin/exportfs\n").answer("nproc", stdout="64\n")
    cs = run_queued(tuning_plan_start, host=local_host, user=admin, profile="wan")
    rows = {s.key: (s.action, s.original, s.value, s.note) for s in cs.settings.all()}
    assert rows["vm.swappiness"] == ("skip", "", "10", "Not on this host (no such setting).")
    assert rows["net.core.rmem_max"] == (
        "skip",
        "268435456",
        str(128 << 20),
        "The kernel's value is already as high or higher: never lowered.",
    )
    assert rows["net.ipv4.tcp_congestion_control"] == ("skip", "cubic", "bbr", "This kernel has no tcp_bbr module.")
    assert rows["net.core.default_qdisc"] == ("set", "fq_codel", "fq", "")
    assert rows["smb_multichannel"] == ("set", "no", "yes", "")
    assert rows["nfs_threads"] == ("set", "8", "32", "")  # one per core, at most 32
    assert cs.status == "planned" and not fake.mutations


# --- apply -----------------------------------------------------------------------------------------------------------


def test_apply_writes_exactly_the_plan_then_the_boot_file_and_reads_the_kernel_again(
    run_queued, fake, local_host, admin
):
    cs = planned(run_queued, fake, local_host, admin)
    seen = []
    fake.on("sysctl", "-q", "-w", call=lambda argv: seen.append(ChangeSet.objects.get(pk=cs.pk).status))
    cs = run_queued(tuning_apply_start, change_set=cs, user=admin)
    assert set(seen) == {"applying"} and cs.status == "applied" and cs.message == "" and cs.ended_at
    assert fake.mutations == [
        *(["sysctl", "-q", "-w", f"{k}={v}"] for k, (_, v) in LAN_10G_SET.items()),
        ["write_file", "/etc/sysctl.d/90-tarn.conf", "644"],
        ["write_file", "/etc/modprobe.d/tarn-zfs.conf", "644"],
    ]
    # every write is checked against the host just before it: still the planned original
    assert fake.argvs[:4] == [
        ["sysctl", "--", "net.core.netdev_max_backlog"],
        ["sysctl", "-q", "-w", "net.core.netdev_max_backlog=30000"],
        ["sysctl", "--", "net.core.rmem_max"],
        ["sysctl", "-q", "-w", "net.core.rmem_max=134217728"],
    ]
    assert fake.files["/etc/sysctl.d/90-tarn.conf"] == HEADER + (
        "net.core.netdev_max_backlog = 30000\n"
        "net.core.rmem_max = 134217728\n"
        "net.core.wmem_max = 134217728\n"
        "net.ipv4.tcp_mtu_probing = 1\n"
        "net.ipv4.tcp_rmem = 4096 131072 67108864\n"
        "net.ipv4.tcp_slow_start_after_idle = 0\n"
        "net.ipv4.tcp_wmem = 4096 65536 67108864\n"
        "vm.swappiness = 10\n"
    )
    assert fake.files["/etc/modprobe.d/tarn-zfs.conf"] == HEADER
    assert fake.argvs[-3:] == [
        ["sysctl", "-a", "--pattern", r"^(net\.core\.|net\.ipv4\.tcp_|vm\.)"],
        ["grep", "-r", "-H", ".", "--", "/sys/module/zfs/parameters"],
        ["cat", "--", "/proc/spl/kstat/zfs/arcstats"],
    ]
    state = KernelState.objects.get(host=local_host)
    assert state.sysctl["vm.swappiness"] == "10" and state.sysctl["net.ipv4.tcp_rmem"] == "4096 131072 67108864"
    active = {s.key: (s.original, s.value) for s in Setting.objects.filter(active=True)}
    assert active == LAN_10G_SET
    assert Operation.objects.get(pk=cs.operation_id).message == "Applied 8 settings."


def test_apply_leaves_alone_a_setting_changed_on_the_host_since_the_plan(run_queued, fake, local_host, admin):
    cs = planned(run_queued, fake, local_host, admin)
    fake.sysctl["vm.swappiness"] = "30"  # someone ran sysctl by hand in between
    cs = run_queued(tuning_apply_start, change_set=cs, user=admin)
    skipped = cs.settings.get(key="vm.swappiness")
    assert (skipped.action, skipped.active, skipped.note) == (
        "skip",
        False,
        "Changed since the plan (now 30); left alone.",
    )
    assert ["sysctl", "-q", "-w", "vm.swappiness=10"] not in fake.argvs and fake.sysctl["vm.swappiness"] == "30"
    assert "vm.swappiness" not in fake.files["/etc/sysctl.d/90-tarn.conf"]
    assert cs.status == "applied" and Operation.objects.get(pk=cs.operation_id).message == "Applied 7 settings."


def test_a_value_the_kernel_refuses_fails_the_change_set_with_the_kernels_words(run_queued, fake, local_host, admin):
    cs = planned(run_queued, fake, local_host, admin)
    fake.answer(
        "sysctl",
        "-q",
        "-w",
        "net.core.rmem_max=134217728",
        returncode=255,
        stderr='sysctl: setting key "net.core.rmem_max": Invalid argument\n',
    )
    cs = run_queued(tuning_apply_start, change_set=cs, user=admin)
    words = 'sysctl: sysctl: setting key "net.core.rmem_max": Invalid argument'
    assert cs.status == "failed" and cs.message.startswith(words) and cs.ended_at
    op = Operation.objects.get(pk=cs.operation_id)
    assert (op.status, op.message) == ("failed", words)
    assert not cs.settings.get(key="net.core.rmem_max").active
    assert ["sysctl", "-q", "-w", "net.core.wmem_max=134217728"] not in fake.argvs  # it stopped there


def test_a_refusal_midway_keeps_what_was_applied_true_on_the_host_and_says_so(run_queued, fake, local_host, admin):
    cs = planned(run_queued, fake, local_host, admin)
    fake.answer(
        "sysctl",
        "-q",
        "-w",
        "net.core.wmem_max=134217728",
        returncode=255,
        stderr='sysctl: setting key "net.core.wmem_max": Invalid argument\n',
    )
    cs = run_queued(tuning_apply_start, change_set=cs, user=admin)
    applied = list(cs.settings.filter(active=True, kind="sysctl"))
    assert applied and not cs.settings.get(key="net.core.wmem_max").active
    assert cs.status == "failed" and f"The {len(applied)} setting(s) applied before it stay in effect" in cs.message
    for s in applied:  # each survives a reboot as its runtime value does
        assert f"{s.key} = {s.value}\n" in fake.files[kernel.SYSCTL_FILE]
    assert "net.core.wmem_max" not in fake.files[kernel.SYSCTL_FILE]


def test_one_zfs_parameter_goes_through_the_module_helper_and_into_modprobe_d(run_queued, fake, local_host, admin):
    cs = run_queued(
        setting_start,
        host=local_host,
        user=admin,
        kind="zfs",
        key="zfs_txg_timeout",
        value="10",
        reason="longer transaction groups",
    )
    assert (cs.kind, cs.status) == ("tunable", "applied")
    assert fake.mutations == [
        ["module_parameter", "zfs", "zfs_txg_timeout", "10"],
        ["write_file", "/etc/sysctl.d/90-tarn.conf", "644"],
        ["write_file", "/etc/modprobe.d/tarn-zfs.conf", "644"],
    ]
    assert fake.argvs[0] == ["grep", "-H", ".", "--", "/sys/module/zfs/parameters/zfs_txg_timeout"]
    assert fake.files["/etc/modprobe.d/tarn-zfs.conf"] == HEADER + "options zfs zfs_txg_timeout=10\n"
    assert fake.files["/etc/sysctl.d/90-tarn.conf"] == HEADER
    s = cs.settings.get()
    assert (s.original, s.value, s.active) == ("5", "10", True)
    assert KernelState.objects.get(host=local_host).zfs["zfs_txg_timeout"] == "10"


def test_a_second_change_of_a_key_replaces_the_first_and_reverts_to_the_value_from_before_tarn(
    run_queued, fake, local_host, admin
):
    first = run_queued(
        setting_start, host=local_host, user=admin, kind="sysctl", key="vm.swappiness", value="10", reason=""
    )
    second = run_queued(
        setting_start, host=local_host, user=admin, kind="sysctl", key="vm.swappiness", value="20", reason=""
    )
    old, new = first.settings.get(), second.settings.get()
    assert (old.active, old.note) == (False, f"Replaced by change {second.pk}.")
    assert (new.original, new.value, new.active) == ("60", "20", True)
    assert fake.files["/etc/sysctl.d/90-tarn.conf"] == HEADER + "vm.swappiness = 20\n"
    fake.reset()
    op = run_queued(tuning_revert_start, host=local_host, user=admin, change_set=second)
    assert fake.mutations == [
        ["sysctl", "-q", "-w", "vm.swappiness=60"],
        ["write_file", "/etc/sysctl.d/90-tarn.conf", "644"],
        ["write_file", "/etc/modprobe.d/tarn-zfs.conf", "644"],
    ]
    assert fake.files["/etc/sysctl.d/90-tarn.conf"] == HEADER
    second.refresh_from_db()
    assert (second.status, second.message) == ("reverted", "Every original value is back.")
    assert (op.kind, op.status, op.message) == ("tuning.revert", "succeeded", "Reverted vm.swappiness.")


# --- revert ----------------------------------------------------------------------------------------------------------


def test_reverting_an_applied_profile_writes_every_original_back_and_empties_tarns_files(
    run_queued, fake, local_host, admin
):
    cs = run_queued(tuning_apply_start, change_set=planned(run_queued, fake, local_host, admin), user=admin)
    fake.reset()
    run_queued(change_revert_start, change_set=cs, user=admin)
    assert fake.mutations == [
        *(["sysctl", "-q", "-w", f"{k}={was}"] for k, (was, _) in LAN_10G_SET.items()),
        ["write_file", "/etc/sysctl.d/90-tarn.conf", "644"],
        ["write_file", "/etc/modprobe.d/tarn-zfs.conf", "644"],
    ]
    assert fake.files == {"/etc/sysctl.d/90-tarn.conf": HEADER, "/etc/modprobe.d/tarn-zfs.conf": HEADER}
    assert fake.sysctl == FakeHost().sysctl  # the kernel is as captured again, tabs and all
    cs.refresh_from_db()
    assert (cs.status, cs.message) == ("reverted", "Every original value is back.")
    assert not Setting.objects.filter(active=True).exists()
    assert Setting.objects.filter(change_set=cs, reverted_at__isnull=False).count() == len(LAN_10G_SET)


# --- refusals ----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("status", ["planning", "applying", "applied", "failed", "reverted"])
def test_only_a_planned_change_set_can_be_applied(fake, local_host, admin, status):
    cs = ChangeSet.objects.create(host=local_host, kind="profile", profile="lan10g", title="t", status=status)
    with pytest.raises(ValidationError) as refused:
        tuning_apply_start(change_set=cs, user=admin)
    assert field_of(refused) == {"change_set": ["Only a planned change set can be applied; plan again."]}
    assert not Operation.objects.exists() and not fake.calls


def test_reverting_a_change_with_nothing_in_effect_is_refused(fake, local_host, admin):
    cs = ChangeSet.objects.create(host=local_host, kind="profile", title="t", status="reverted")
    Setting.objects.create(
        change_set=cs, host=local_host, kind="sysctl", key="vm.swappiness", original="60", value="10", active=False
    )
    with pytest.raises(ValidationError) as refused:
        change_revert_start(change_set=cs, user=admin)
    assert field_of(refused) == {"change_set": ["Nothing of this change is in effect any more."]}
    assert not Operation.objects.exists()


@pytest.mark.parametrize("status", ["applying", "applied", "kept", "rolled_back", "reverted", "failed"])
def test_keeping_a_change_that_is_not_pending_is_refused(fake, local_host, admin, status):
    cs = ChangeSet.objects.create(host=local_host, kind="mtu", title="t", status=status, restore_unit="tarn-restore-1")
    with pytest.raises(ValidationError) as refused:
        change_keep_start(change_set=cs, user=admin)
    assert field_of(refused) == {"change_set": ["This change is not waiting for Keep."]}
    assert not Operation.objects.exists()


def test_keeping_after_the_deadline_is_refused(fake, local_host, admin):
    cs = ChangeSet.objects.create(
        host=local_host,
        kind="mtu",
        title="t",
        status="pending",
        restore_unit="tarn-restore-1",
        deadline=timezone.now() - timedelta(seconds=1),
    )
    with pytest.raises(ValidationError) as refused:
        change_keep_start(change_set=cs, user=admin)
    assert field_of(refused) == {"change_set": ["Too late: the host has put the original settings back."]}


def test_a_network_change_waits_for_the_pending_one_and_for_a_sane_countdown(fake, local_host, admin):
    with pytest.raises(ValidationError) as refused:
        link_mtu_start(host=local_host, user=admin, link="enp0s17", mtu=9000, peers=[], seconds=5)
    assert list(field_of(refused)) == ["seconds"]
    ChangeSet.objects.create(host=local_host, kind="mtu", title="t", status="pending")
    with pytest.raises(ValidationError) as refused:
        link_mtu_start(host=local_host, user=admin, link="enp0s17", mtu=9000, peers=[], seconds=60)
    assert list(field_of(refused)) == ["links"]
    assert ChangeSet.objects.count() == 1 and not Operation.objects.exists()


@pytest.mark.parametrize("status", ["pending", "applied", "rolled_back", "failed"])
def test_only_a_kept_network_change_can_be_reverted(fake, local_host, admin, status):
    cs = ChangeSet.objects.create(
        host=local_host,
        kind="mtu",
        title="t",
        status=status,
        target={"link": "enp0s17", "mtu": 9000, "original_mtu": 1500, "seconds": 60},
    )
    with pytest.raises(ValidationError) as refused:
        network_revert_start(change_set=cs, user=admin)
    assert field_of(refused) == {"change_set": ["Only a kept network change can be reverted."]}
    assert ChangeSet.objects.count() == 1


# --- network changes: arm, apply, keep or roll back -------------------------------------------------------------------


def test_an_mtu_change_arms_the_restore_before_applying_and_waits_for_keep(run_queued, fake, local_host, admin):
    seen = []
    fake.on("ip", "-batch", call=lambda argv: seen.append(ChangeSet.objects.get().status))
    before = timezone.now()
    cs = run_queued(link_mtu_start, host=local_host, user=admin, link="enp0s17", mtu=9000, peers=[], seconds=90)
    n = cs.pk
    assert seen == ["applying"] and cs.status == "pending" and cs.message == "" and cs.ended_at is None
    assert fake.mutations == [
        ["write_file", f"/run/tarn/restore-{n}.ip", "600"],
        [
            "systemd-run",
            f"--unit=tarn-restore-{n}",
            "--on-active=90",
            "--timer-property=AccuracySec=100ms",
            f"--description=Tarn: undo change {n} (MTU 9000 on enp0s17) unless kept",
            f"--property=StandardOutput=append:/run/tarn/restore-{n}.log",
            f"--property=StandardError=append:/run/tarn/restore-{n}.log",
            "--",
            "ip",
            "-force",
            "-batch",
            f"/run/tarn/restore-{n}.ip",
        ],
        ["write_file", f"/run/tarn/apply-{n}.ip", "600"],
        ["ip", "-batch", f"/run/tarn/apply-{n}.ip"],
    ]
    assert fake.files == {
        # the MTU, then the link's static addresses and admin-made routes as they were (the fake host has no route)
        f"/run/tarn/restore-{n}.ip": "link set dev enp0s17 mtu 1500\naddress replace 10.77.0.2/24 dev enp0s17\n",
        f"/run/tarn/apply-{n}.ip": "link set dev enp0s17 mtu 9000\n",
    }
    after_apply = fake.argvs[fake.argvs.index(["ip", "-batch", f"/run/tarn/apply-{n}.ip"]) + 1]
    assert after_apply == ["true"]  # the host still answers
    assert (cs.apply_lines, cs.restore_lines) == (
        ["link set dev enp0s17 mtu 9000"],
        ["link set dev enp0s17 mtu 1500", "address replace 10.77.0.2/24 dev enp0s17"],
    )
    assert cs.restore_unit == f"tarn-restore-{n}" and cs.target["original_mtu"] == 1500
    assert before + timedelta(seconds=90) <= cs.deadline <= timezone.now() + timedelta(seconds=90)
    op = Operation.objects.get(pk=cs.operation_id)
    assert (op.kind, op.status) == ("tuning.network", "succeeded")
    assert op.message == "Applied. Keep it within 90 s or local puts the old settings back."


def test_a_bridge_takes_the_ports_address_and_its_restore_gives_it_back(run_queued, fake, local_host, admin):
    cs = run_queued(bridge_create_start, host=local_host, user=admin, name="br1", ports=["enp0s17"], seconds=60)
    assert cs.status == "pending"
    assert fake.files[f"/run/tarn/apply-{cs.pk}.ip"] == (
        "link add name br1 address 52:54:00:12:34:57 mtu 1500 type bridge\n"
        "address del 10.77.0.2/24 dev enp0s17\n"
        "link set dev enp0s17 mtu 1500 master br1\n"
        "link set dev enp0s17 up\n"
        "address add 10.77.0.2/24 dev br1\n"
        "link set dev br1 up\n"
    )
    assert fake.files[f"/run/tarn/restore-{cs.pk}.ip"] == (
        "link del dev br1\n"
        "link set dev enp0s17 nomaster\n"
        "link set dev enp0s17 mtu 1500\n"
        "address add 10.77.0.2/24 dev enp0s17\n"
        "address replace 10.77.0.2/24 dev enp0s17\n"
    )


def test_a_peer_that_does_not_carry_the_mtu_puts_the_original_back_at_once(run_queued, fake, local_host, admin):
    fake.answer("ping", returncode=1, stdout="3 packets transmitted, 0 received, 100% packet loss, time 405ms\n")
    cs = run_queued(
        link_mtu_start, host=local_host, user=admin, link="enp0s17", mtu=9000, peers=["10.77.0.1"], seconds=60
    )
    n = cs.pk
    assert fake.mutations[-3:] == [
        ["ip", "-batch", f"/run/tarn/apply-{n}.ip"],
        ["systemctl", "stop", "--", f"tarn-restore-{n}.timer"],
        ["ip", "-force", "-batch", f"/run/tarn/restore-{n}.ip"],
    ]
    assert ["ping", "-n", "-M", "do", "-s", "8972", "-c", "3", "-i", "0.2", "-W", "2", "--", "10.77.0.1"] in fake.argvs
    message = (
        "The path to 10.77.0.1 does not carry MTU 9000 unfragmented (3 packets transmitted, 0 received, "
        "100% packet loss, time 405ms). The original settings are back."
    )
    assert (cs.status, cs.message) == ("failed", message) and cs.ended_at
    op = Operation.objects.get(pk=cs.operation_id)
    assert (op.status, op.message) == ("failed", message)


def test_losing_the_host_after_applying_leaves_the_restore_to_the_host(run_queued, fake, local_host, admin):
    def gone(argv):
        raise HostUnreachable("cannot reach 192.0.2.9:22: Connection timed out")

    fake.on("true", call=gone)
    cs = run_queued(link_mtu_start, host=local_host, user=admin, link="enp0s17", mtu=9000, peers=[], seconds=60)
    assert cs.status == "pending" and cs.message == (
        "Lost the connection after applying (cannot reach 192.0.2.9:22: Connection timed out); local restores itself."
    )
    assert not any(a[:2] == ["systemctl", "stop"] for a in fake.argvs)  # the armed restore stays armed
    assert Operation.objects.get(pk=cs.operation_id).status == "succeeded"


def test_a_link_gone_from_the_host_fails_before_anything_is_armed(run_queued, fake, local_host, admin):
    Link.objects.create(host=local_host, name="eth9", kind="ether", mtu=1500, observed_at=timezone.now())
    cs = run_queued(link_mtu_start, host=local_host, user=admin, link="eth9", mtu=9000, peers=[], seconds=60)
    assert (cs.status, cs.message) == ("failed", "eth9 is gone from the host.")
    assert not fake.mutations and Operation.objects.get(pk=cs.operation_id).status == "failed"


def test_keep_disarms_the_restore_then_writes_the_networkd_files_and_reloads(run_queued, fake, local_host, admin):
    cs = run_queued(link_mtu_start, host=local_host, user=admin, link="enp0s17", mtu=9000, peers=[], seconds=60)
    fake.answer("ip", "-j", "-d", "-s", "addr", "show", stdout=links_after(mtu={"enp0s17": 9000}))
    stale = "/etc/systemd/network/05-tarn-old0.network"
    fake.files[stale] = "[Match]\nName=old0\n"
    fake.reset()
    op = run_queued(change_keep_start, change_set=cs, user=admin)
    assert fake.mutations == [
        ["systemctl", "stop", "--", f"tarn-restore-{cs.pk}.timer"],
        ["remove_file", stale],
        ["write_file", "/etc/systemd/network/05-tarn-enp0s17.network", "644"],
        ["networkctl", "reload"],
    ]
    assert fake.files["/etc/systemd/network/05-tarn-enp0s17.network"] == NETWORKD_HEADER + (
        "[Match]\nPermanentMACAddress=52:54:00:12:34:57\nType=ether\n\n[Link]\nMTUBytes=9000\n\n"
        "[Network]\nAddress=10.77.0.2/24\nLinkLocalAddressing=no\nIPv6AcceptRA=no\nConfigureWithoutCarrier=yes\n"
    )
    assert stale not in fake.files
    cs.refresh_from_db()
    assert (
        cs.status == "kept" and cs.ended_at and (op.status, op.message) == ("succeeded", "Kept; it survives a reboot.")
    )
    assert set(Link.objects.filter(managed=True).values_list("name", flat=True)) == {"enp0s17"}
    assert Link.objects.get(name="enp0s17").mtu == 9000


def test_keep_after_the_host_restored_itself_is_rolled_back_and_writes_nothing(run_queued, fake, local_host, admin):
    cs = run_queued(link_mtu_start, host=local_host, user=admin, link="enp0s17", mtu=9000, peers=[], seconds=60)
    fake.reset()
    fake.answer("systemctl", "stop", returncode=5, stderr=f"Failed to stop tarn-restore-{cs.pk}.timer: not loaded.\n")
    op = run_queued(change_keep_start, change_set=cs, user=admin)
    assert fake.mutations == [["systemctl", "stop", "--", f"tarn-restore-{cs.pk}.timer"]]
    cs.refresh_from_db()
    too_late = "Too late: the host had put the original settings back."
    assert (cs.status, cs.message) == ("rolled_back", too_late) and (op.status, op.message) == ("failed", too_late)
    assert not Link.objects.filter(managed=True).exists()


def test_a_change_not_kept_by_its_deadline_is_marked_rolled_back_and_its_links_read_again(fake, local_host):
    due = ChangeSet.objects.create(
        host=local_host, kind="mtu", title="late", status="pending", deadline=timezone.now() - timedelta(seconds=10)
    )
    waiting = ChangeSet.objects.create(
        host=local_host, kind="mtu", title="in time", status="pending", deadline=timezone.now() + timedelta(seconds=30)
    )
    assert changes_settle() == 1
    due.refresh_from_db()
    waiting.refresh_from_db()
    assert (due.status, due.message) == ("rolled_back", "Not kept in time: the host put the original settings back.")
    assert due.ended_at and waiting.status == "pending"
    assert list(Operation.objects.values_list("kind", "target")) == [("tuning.refresh", "host:local:tuning:refresh")]


def test_reverting_a_kept_mtu_is_a_new_armed_change_and_keeping_it_marks_the_old_one_reverted(
    run_queued, fake, local_host, admin
):
    kept = run_queued(link_mtu_start, host=local_host, user=admin, link="enp0s17", mtu=9000, peers=[], seconds=45)
    fake.answer("ip", "-j", "-d", "-s", "addr", "show", stdout=links_after(mtu={"enp0s17": 9000}))
    run_queued(change_keep_start, change_set=kept, user=admin)
    kept.refresh_from_db()
    fake.reset()
    undo = run_queued(change_revert_start, change_set=kept, user=admin)
    assert undo.pk != kept.pk and undo.title == "Revert: MTU 9000 on enp0s17" and undo.status == "pending"
    assert undo.target == {
        "link": "enp0s17",
        "mtu": 1500,
        "peers": [],
        "seconds": 45,
        "reverts": kept.pk,
        "original_mtu": 9000,
    }
    assert fake.files[f"/run/tarn/apply-{undo.pk}.ip"] == "link set dev enp0s17 mtu 1500\n"
    assert fake.files[f"/run/tarn/restore-{undo.pk}.ip"] == (
        "link set dev enp0s17 mtu 9000\naddress replace 10.77.0.2/24 dev enp0s17\n"
    )
    assert "--on-active=45" in fake.argvs[fake.argvs.index(["ip", "-batch", f"/run/tarn/apply-{undo.pk}.ip"]) - 2]
    kept.refresh_from_db()
    assert kept.status == "kept"  # until the undo is kept itself
    fake.answer("ip", "-j", "-d", "-s", "addr", "show", stdout=links_after())
    run_queued(change_keep_start, change_set=undo, user=admin)
    kept.refresh_from_db()
    undo.refresh_from_db()
    assert undo.status == "kept" and (kept.status, kept.message) == ("reverted", f"Undone by change {undo.pk}.")
    assert "MTUBytes=1500" in fake.files["/etc/systemd/network/05-tarn-enp0s17.network"]


def test_keeping_a_deleted_bridge_drops_its_files_and_keeps_its_port(run_queued, fake, local_host, admin):
    Link.objects.filter(name__in=["br0", "enp0s18"]).update(managed=True)
    for name in ("05-tarn-br0.netdev", "05-tarn-br0.network", "05-tarn-enp0s18.network"):
        fake.files[f"/etc/systemd/network/{name}"] = "old\n"
    cs = run_queued(bridge_delete_start, host=local_host, user=admin, name="br0", confirm="br0", seconds=60)
    assert (cs.apply_lines, cs.restore_lines) == (
        ["link set dev enp0s18 nomaster", "link del dev br0"],
        [
            "link add name br0 address c2:b9:9d:46:f4:1c mtu 1500 type bridge",
            "link set dev enp0s18 master br0",
            "link set dev br0 up",
        ],
    )
    fake.answer("ip", "-j", "-d", "-s", "addr", "show", stdout=links_after(unbridged="br0"))
    fake.reset()
    run_queued(change_keep_start, change_set=cs, user=admin)
    removed = sorted(c.argv[1] for c in fake.calls if c.argv[0] == "remove_file")
    assert removed == ["/etc/systemd/network/05-tarn-br0.netdev", "/etc/systemd/network/05-tarn-br0.network"]
    assert fake.writes == [
        (
            "/etc/systemd/network/05-tarn-enp0s18.network",
            NETWORKD_HEADER
            + (
                "[Match]\nPermanentMACAddress=52:54:00:12:34:58\nType=ether\n\n[Link]\nMTUBytes=1500\n\n"
                "[Network]\nLinkLocalAddressing=no\nIPv6AcceptRA=no\nConfigureWithoutCarrier=yes\n"
            ),
        ),
    ]
    assert fake.mutations[-1] == ["networkctl", "reload"]
    assert list(Link.objects.filter(managed=True).values_list("name", flat=True)) == ["enp0s18"]
    cs.refresh_from_db()
    assert cs.status == "kept"


def test_keeping_a_deleted_bridge_writes_the_address_it_moved_even_if_networkd_dropped_it(
    run_queued, fake, local_host, admin
):
    """Seen in the lab: while the delete is armed, networkd configures the port from its old file (a bridge port,
    no address) and drops the address Tarn moved onto it. Keep writes the address into the port's file anyway and
    waits until networkd has put it back."""

    def links(*, bridged: bool, on_port: bool) -> str:
        raw = json.loads(links_after(unbridged="" if bridged else "br0"))
        address = {"family": "inet", "local": "10.77.0.9", "prefixlen": 24, "scope": "global"}
        for link in raw:
            if link["ifname"] == ("br0" if bridged else "enp0s18") and (bridged or on_port):
                link["addr_info"] = [address]
        return json.dumps(raw)

    fake.answer("ip", "-j", "-d", "-s", "addr", "show", stdout=links(bridged=True, on_port=False))
    cs = run_queued(bridge_delete_start, host=local_host, user=admin, name="br0", confirm="br0", seconds=60)
    assert cs.apply_lines[-1] == "address add 10.77.0.9/24 dev enp0s18"
    assert cs.target["moved"] == {"link": "enp0s18", "addresses": ["10.77.0.9/24"]}
    fake.answer("ip", "-j", "-d", "-s", "addr", "show", stdout=links(bridged=False, on_port=False))  # dropped
    fake.on(
        "networkctl",
        "reload",
        call=lambda argv: fake.answer(
            "ip", "-j", "-d", "-s", "addr", "show", stdout=links(bridged=False, on_port=True)
        ),
    )
    fake.reset()
    op = run_queued(change_keep_start, change_set=cs, user=admin)
    assert op.status == "succeeded", op.message
    assert "Address=10.77.0.9/24" in fake.files["/etc/systemd/network/05-tarn-enp0s18.network"]
    assert fake.mutations[-1] == ["networkctl", "reload"]


def test_a_keep_that_fails_after_disarming_arms_the_restore_again_and_a_later_keep_finishes(
    run_queued, fake, local_host, admin, monkeypatch
):
    """Item 11 of issue 23: the timer was stopped, then writing the networkd files failed. The host must still
    be able to undo the change (a new timer), the change must not be called rolled back while it is live, and
    a second Keep stops the new timer and finishes."""
    cs = run_queued(link_mtu_start, host=local_host, user=admin, link="enp0s17", mtu=9000, peers=[], seconds=60)
    fake.answer("ip", "-j", "-d", "-s", "addr", "show", stdout=links_after(mtu={"enp0s17": 9000}))
    real_write = fake.write

    def disk_full(path, text, mode, read_only):
        raise HostError("write_file: No space left on device")

    monkeypatch.setattr(fake, "write", disk_full)
    fake.reset()
    op = run_queued(change_keep_start, change_set=cs, user=admin)
    cs.refresh_from_db()
    assert op.status == "failed" and cs.status == "pending"
    assert cs.message.startswith("Keep failed (write_file: No space left on device); the restore is armed again")
    rearmed = fake.mutations[-1]
    assert rearmed[0] == "systemd-run" and f"--unit={cs.restore_unit}" in rearmed and "--on-active=60" in rearmed
    assert cs.restore_unit.startswith(f"tarn-restore-{cs.pk}-") and 50 < (cs.deadline - timezone.now()).seconds <= 60
    assert changes_settle() == 0, "live and counting down again: not rolled back"

    monkeypatch.setattr(fake, "write", real_write)
    fake.reset()
    op = run_queued(change_keep_start, change_set=cs, user=admin)
    cs.refresh_from_db()
    assert (op.status, cs.status) == ("succeeded", "kept")
    assert fake.mutations[0] == ["systemctl", "stop", "--", f"{cs.restore_unit}.timer"]
