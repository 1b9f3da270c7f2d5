"""Replace, attach and offline never act on one click: the page names the device, offers only free disks at least
as large (with their sizes) and asks for the device's name typed; an offline that leaves its vdev with no
redundancy asks for the pool's name, one that would stop the pool is refused. The API keeps the same rules (400
naming the field)."""

import pytest
from django.utils import timezone

from appliance.models import Operation
from pools import selectors
from pools.models import Disk, Pool, Vdev
from tests.pools.test_pool_create_view import D


@pytest.fixture
def small_disk(local_host):
    return Disk.objects.create(
        host=local_host,
        name="sda",
        path="/dev/sda",
        by_id="/dev/disk/by-id/ata-Small",
        size=2 * 10**9,
        media="ssd",
        observed_at=timezone.now(),
    )


def url(pool):
    return f"/pools/{pool.pk}/device/"


def text(response) -> str:
    """The page with its whitespace runs made single spaces (templates wrap their sentences)."""
    return " ".join(response.content.decode().split())


def argvs():
    return [op.params["argvs"] for op in Operation.objects.all()]


def test_the_replace_page_offers_only_free_disks_large_enough_with_their_sizes(admin_client, tank, small_disk):
    page = text(admin_client.get(url(tank[0]), {"action": "replace", "device": D(2)}))
    assert f'<option value="{D(3)}">{D(3)} — 4398.0 GB hdd</option>' in page
    assert f'<option value="{small_disk.by_id}"' not in page
    assert f"Not offered, smaller than 4398.0 GB: {small_disk.by_id} (2.0 GB)." in page
    assert "Type the device&#x27;s name (d2) to replace it." in page
    assert not Operation.objects.exists()


def test_the_pool_page_links_to_the_confirmation_instead_of_acting(admin_client, tank):
    page = admin_client.get(f"/pools/{tank[0].pk}/").content.decode()
    assert f'href="/pools/{tank[0].pk}/device/?action=replace&amp;device=' in page
    assert 'value="replace"' not in page and 'value="offline"' not in page  # no button that acts at once


@pytest.mark.parametrize(
    "form, field, message",
    [
        ({"new_device": D(3)}, "confirm", "Type the device&#x27;s name (d2)"),
        ({"new_device": D(3), "confirm": "d1"}, "confirm", "Type the device&#x27;s name (d2)"),
        ({"new_device": D(3), "confirm": "d2 "}, "confirm", "Type the device&#x27;s name (d2)"),
        ({"new_device": "/dev/disk/by-id/ata-Small", "confirm": "d2"}, "new_device", "2.00 GB) is smaller than d2"),
        ({"new_device": D(1), "confirm": "d2"}, "new_device", "is not a free disk"),
    ],
)
def test_a_replace_not_confirmed_or_to_a_smaller_disk_is_refused_on_the_page(
    admin_client, tank, small_disk, form, field, message
):
    response = admin_client.post(url(tank[0]), {"action": "replace", "device": D(2), **form})
    assert response.status_code == 200 and message in text(response)
    assert not Operation.objects.exists()


def test_a_confirmed_replace_queues_the_exact_argv(admin_client, tank, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False):
        response = admin_client.post(
            url(tank[0]), {"action": "replace", "device": D(2), "new_device": D(3), "confirm": "d2"}
        )
    assert response.status_code == 302 and argvs() == [[["zpool", "replace", "--", "tank", D(2), D(3)]]]


def test_offline_that_leaves_a_mirror_without_redundancy_asks_for_the_pools_name(admin_client, tank):
    page = text(admin_client.get(url(tank[0]), {"action": "offline", "device": D(2)}))
    assert "with no redundancy</strong>" in page and "Type the pool&#x27;s name (tank)" in page
    refused = admin_client.post(url(tank[0]), {"action": "offline", "device": D(2), "confirm": "d2"})
    assert "Type the pool&#x27;s name (tank) to go on." in text(refused) and not Operation.objects.exists()
    done = admin_client.post(url(tank[0]), {"action": "offline", "device": D(2), "confirm": "tank"})
    assert done.status_code == 302 and argvs() == [[["zpool", "offline", "--", "tank", D(2)]]]


def test_offline_of_the_last_copy_is_refused(admin_client, tank):
    Vdev.objects.filter(path=D(1)).update(state="OFFLINE")
    page = text(admin_client.get(url(tank[0]), {"action": "offline", "device": D(2)}))
    assert "holds the only valid copy of mirror-0" in page and "Take offline</button>" not in page
    response = admin_client.post(url(tank[0]), {"action": "offline", "device": D(2), "confirm": "tank"})
    assert "would stop the pool" in text(response) and not Operation.objects.exists()


def add_vdev(pool, position, name, kind, parent=None, state="ONLINE", role="data"):
    return Vdev.objects.create(
        pool=pool,
        parent=parent,
        position=position,
        depth=int(parent is not None),
        name=name,
        type=kind,
        role=role,
        state=state,
        path=f"/dev/disk/by-id/{name}" if kind == "disk" else "",
    )


def plan(pool, name, action="offline"):
    member = selectors.device_member(pool=pool, device=f"/dev/disk/by-id/{name}")
    return selectors.device_plan(host=pool.host, member=member, action=action)


def test_what_offline_leaves_follows_the_vdevs_redundancy(local_host):
    pool = Pool.objects.create(host=local_host, name="big", guid="2", state="DEGRADED", observed_at=timezone.now())
    three = add_vdev(pool, 1, "mirror-0", "mirror")
    for i in range(3):
        add_vdev(pool, 2 + i, f"m{i}", "disk", three)
    raidz = add_vdev(pool, 10, "raidz2-1", "raidz")
    for i in range(5):
        add_vdev(pool, 11 + i, f"r{i}", "disk", raidz, state="FAULTED" if i == 0 else "ONLINE")
    add_vdev(pool, 20, "alone", "disk")
    add_vdev(pool, 21, "slog", "disk", role="log")
    assert (plan(pool, "m0").margin, plan(pool, "m0").confirm) == (1, "m0")  # a three-way mirror keeps a copy
    assert (plan(pool, "r1").margin, plan(pool, "r1").confirm) == (0, "big")  # raidz2 already down one disk
    Vdev.objects.filter(name="r2").update(state="OFFLINE")
    assert plan(pool, "r1").margin == -1
    assert plan(pool, "alone").margin == -1  # a single-disk vdev: its data is nowhere else
    assert (plan(pool, "slog").margin, plan(pool, "slog").confirm) == (None, "slog")  # ZFS can do without a log


def test_a_member_gone_from_the_machine_is_sized_by_what_zpool_status_said(admin_client, tank, small_disk):
    Disk.objects.filter(by_id=D(2)).delete()  # a failed disk, pulled
    Vdev.objects.filter(path=D(2)).update(state="UNAVAIL", size=3 * 10**9)
    found = plan(tank[0], D(2).rsplit("/", 1)[1], "replace")
    assert found.need == 3 * 10**9 and small_disk in found.too_small and len(found.fitting) == 4


@pytest.mark.parametrize(
    "body, field",
    [
        ({"action": "replace", "device": D(2), "new_device": D(3)}, "confirm"),
        ({"action": "replace", "device": D(2), "new_device": D(3), "confirm": " d2"}, "confirm"),
        (
            {"action": "attach", "device": D(2), "new_device": "/dev/disk/by-id/ata-Small", "confirm": "d2"},
            "new_device",
        ),
        ({"action": "offline", "device": D(2), "confirm": "d2"}, "confirm"),
    ],
)
def test_the_api_refuses_the_same_with_a_400_naming_the_field(admin_client, tank, small_disk, body, field):
    response = admin_client.post(f"/api/v1/pools/{tank[0].pk}/device/", body, content_type="application/json")
    assert response.status_code == 400 and field in response.json(), response.content
    assert not Operation.objects.exists()


def test_the_api_takes_the_device_path_as_its_name(admin_client, tank, django_capture_on_commit_callbacks):
    body = {"action": "replace", "device": D(2), "new_device": D(3), "confirm": D(2)}
    with django_capture_on_commit_callbacks(execute=False):
        response = admin_client.post(f"/api/v1/pools/{tank[0].pk}/device/", body, content_type="application/json")
    assert response.status_code == 202 and argvs() == [[["zpool", "replace", "--", "tank", D(2), D(3)]]]


def test_the_page_for_a_disk_not_in_the_pool_goes_back_saying_so(admin_client, tank):
    response = admin_client.get(url(tank[0]), {"action": "replace", "device": D(5)}, follow=True)
    assert f"{D(5)} is not in tank." in text(response) and not Operation.objects.exists()
