"""Alerts against the lab's real OpenZFS: offlining a disk of a mirror raises "pool not ONLINE", delivered to a real
SMTP server and a real HTTP receiver, and onlining it clears it (delivered too); filling the pool past the capacity
threshold raises its alert; a sample that sees the pool degrade raises the alert at once (no poll to wait for)."""

import json

import pytest

from analytics import services
from analytics.models import Alert
from analytics.services import sample_take
from appliance.models import Operation
from pools.models import Pool
from pools.services import inventory_refresh
from tests.support.receivers import channels_to, evaluate

pytestmark = pytest.mark.lab
D = "/dev/disk/by-id/virtio-zfsdisk{}".format


def test_a_degraded_pool_is_mailed_and_posted_and_cleared_when_the_disk_is_back(
    guest, lab_host, smtp, receiver, django_capture_on_commit_callbacks
):
    controller, inbox = smtp
    url, got, _ = receiver
    channels_to(controller.port, url)
    guest.sh(f"zpool create -f tank mirror {D(1)} {D(2)}")
    inventory_refresh(host=lab_host)
    assert evaluate(lab_host, django_capture_on_commit_callbacks) == ([], [])

    guest.sh("zpool offline tank virtio-zfsdisk2")
    inventory_refresh(host=lab_host)
    raised, _ = evaluate(lab_host, django_capture_on_commit_callbacks)
    assert [(a.rule, a.message) for a in raised] == [("pool_state", "Pool tank on lab is DEGRADED.")]
    assert inbox.messages[-1][1]["Subject"] == "[Tarn] critical: Pool not ONLINE on lab"
    assert json.loads(got[-1][1])["message"] == "Pool tank on lab is DEGRADED."

    guest.sh("zpool online tank virtio-zfsdisk2")
    inventory_refresh(host=lab_host)
    _, cleared = evaluate(lab_host, django_capture_on_commit_callbacks)
    assert [a.rule for a in cleared] == ["pool_state"] and not Alert.objects.filter(cleared_at__isnull=True).exists()
    assert (
        inbox.messages[-1][1]["Subject"] == "[Tarn] cleared: Pool not ONLINE on lab"
        and json.loads(got[-1][1])["event"] == "cleared"
    )


def test_filling_the_pool_past_the_threshold_raises_capacity(guest, lab_host, django_capture_on_commit_callbacks):
    services.rule_save(key="capacity_warning", enabled=True, level="warning", threshold=50)  # less to write
    # A small pool (a 512 MiB file vdev) fills in seconds; a 4 GiB disk took ~50 s to fill under emulation.
    guest.sh("truncate -s 512M /var/tmp/small.img && zpool create -f -O compression=off tank /var/tmp/small.img")
    inventory_refresh(host=lab_host)
    assert evaluate(lab_host, django_capture_on_commit_callbacks) == ([], [])
    guest.sh("dd if=/dev/zero of=/tank/fill bs=1M count=300 status=none && sync", timeout=300)
    inventory_refresh(host=lab_host)
    raised, _ = evaluate(lab_host, django_capture_on_commit_callbacks)
    assert [a.rule for a in raised] == ["capacity_warning"], [a.message for a in raised]
    assert "% full" in raised[0].message


def test_a_sample_that_sees_a_pool_degrade_raises_the_alert_at_once(guest, lab_host, run_queued):
    guest.sh(f"zpool create -f tank mirror {D(1)} {D(2)}")
    inventory_refresh(host=lab_host)
    run_queued(sample_take, host=lab_host)  # healthy: nothing to do
    assert not Alert.objects.exists()
    guest.sh("zpool offline tank virtio-zfsdisk2")
    # No inventory refresh, no evaluation called here: the sample saw it and queued a read of tank on the host's
    # queue (run here at once, as a worker would).
    run_queued(sample_take, host=lab_host)
    assert Pool.objects.get(host=lab_host, name="tank").state == "DEGRADED"
    assert Operation.objects.filter(kind="analytics.health", status="succeeded").count() == 1
    assert [a.rule for a in Alert.objects.filter(cleared_at__isnull=True)] == ["pool_state"]
    guest.sh("zpool online tank virtio-zfsdisk2")
    run_queued(sample_take, host=lab_host)
    assert not Alert.objects.filter(cleared_at__isnull=True).exists()
