"""Disk health against the lab's real disks: QEMU's SATA disks answer ATA SMART and run self-tests, its NVMe drive
has a health log whose critical warning the monitor sets at run time (`qom-set … smart_critical_warning`), its
virtio disks have no SMART at all. Tarn reads them with the real smartctl, and the NVMe's warning reaches a real
SMTP server and a real HTTP receiver as an alert that clears when the warning goes."""

import json
from datetime import timedelta

import pytest
from django.db.models import F

from analytics.models import Alert
from health import services
from health.models import DiskHealth, SelfTestRun
from pools.services import inventory_refresh
from tests.support.receivers import channels_to, evaluate

pytestmark = pytest.mark.lab
NVME = "/machine/peripheral/nvme1dev"


def states(host) -> dict:
    return {r.name: r.state for r in DiskHealth.objects.filter(host=host)}


def test_an_nvme_critical_warning_is_alerted_to_real_receivers_and_cleared(
    guest, lab_host, smtp, receiver, django_capture_on_commit_callbacks
):
    controller, inbox = smtp
    url, got, _ = receiver
    channels_to(controller.port, url)
    guest.nvme(True)
    try:
        inventory_refresh(host=lab_host)
        record = services.health_read(host=lab_host)
        found = states(lab_host)
        assert record.error == "" and found["sda"] == found["sdb"] == found["nvme0n1"] == "ok", found
        assert found["vdb"] == "unsupported" and found["vda"] == "unsupported"  # virtio: no SMART to read
        nvme = DiskHealth.objects.get(host=lab_host, name="nvme0n1")
        assert (nvme.serial, nvme.protocol, nvme.dtype, nvme.temperature) == ("TARNNVME1", "NVMe", "nvme", 50)
        assert evaluate(lab_host, django_capture_on_commit_callbacks) == ([], [])

        guest.monitor(f"qom-set {NVME} smart_critical_warning 4")  # bit 2: reliability degraded
        services.health_read(host=lab_host)
        assert states(lab_host)["nvme0n1"] == "failing"
        raised, _ = evaluate(lab_host, django_capture_on_commit_callbacks)
        assert {a.rule for a in raised} == {"smart_failed", "nvme_warning"}
        posted = [json.loads(body) for _, body in got]
        assert any("reliability degraded" in p["message"] and "TARNNVME1" in p["message"] for p in posted)
        assert any("NVMe critical warning" in m["Subject"] for _, m in inbox.messages)

        guest.monitor(f"qom-set {NVME} smart_critical_warning 0")
        services.health_read(host=lab_host)
        _, cleared = evaluate(lab_host, django_capture_on_commit_callbacks)
        assert {a.rule for a in cleared} == {"smart_failed", "nvme_warning"}
        assert not Alert.objects.filter(cleared_at__isnull=True).exists()
    finally:
        guest.nvme(False)


def test_self_tests_run_on_the_sata_disks_by_hand_and_all_at_once(guest, lab_host, admin_user, run_queued):
    inventory_refresh(host=lab_host)
    services.health_read(host=lab_host)
    sda = DiskHealth.objects.get(host=lab_host, name="sda")
    before = len(sda.self_tests)
    op = run_queued(services.self_test_start, host=lab_host, user=admin_user, device="/dev/sda", kind="short")
    assert op.status == "succeeded", op.message
    sda.refresh_from_db()
    assert len(sda.self_tests) == min(before + 1, 21)  # QEMU keeps 21 entries (per QEMU process, not per state)
    assert (sda.self_tests[0]["kind"], sda.self_tests[0]["passed"]) == ("Short offline", True)
    with pytest.raises(Exception, match="cannot run a short self-test"):  # virtio: none to run
        services.self_test_start(host=lab_host, user=admin_user, device="/dev/vdb", kind="short")

    # Every disk: both SATA disks (in no pool: one group), started by the read that follows, judged by the next.
    logged = {r.device: len(r.self_tests) for r in DiskHealth.objects.filter(host=lab_host, name__in=["sda", "sdb"])}
    run = run_queued(services.self_test_run_start, host=lab_host, user=admin_user, kind="short")
    assert run.groups == [["/dev/sda", "/dev/sdb"]]
    run_queued(services.health_read_start, host=lab_host, user=admin_user)
    run.refresh_from_db()
    if min(logged.values()) >= 20:
        # A full log (a QEMU process that ran many tests) reads the same after a test: the result counts once the
        # drive has been idle its own test time (2 min) after the group started. Moved back rather than waited.
        assert run.status == "running" and run.results == {}, run.results
        SelfTestRun.objects.filter(pk=run.pk).update(group_started_at=F("group_started_at") - timedelta(minutes=3))
        run_queued(services.health_read_start, host=lab_host, user=admin_user)
        run.refresh_from_db()
    assert run.status == "succeeded" and run.results == {"/dev/sda": "passed", "/dev/sdb": "passed"}, run.results
    after = {r.device: len(r.self_tests) for r in DiskHealth.objects.filter(host=lab_host, name__in=["sda", "sdb"])}
    assert after == {d: min(n + 1, 21) for d, n in logged.items()}  # each verdict is the run's own test
    sdb = DiskHealth.objects.get(host=lab_host, name="sdb")
    assert sdb.self_tests[0]["kind"] == "Short offline" and sdb.self_tests[0]["passed"] is True
