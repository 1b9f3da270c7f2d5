"""The pool creation page: free disks only, a live estimate, field errors, and an operation on submit."""

from django.utils import timezone

from appliance.models import Operation
from pools.models import Disk, Pool, Vdev

D = "/dev/disk/by-id/virtio-zfsdisk{}".format


def disks(host, n=6, used=()):
    pool = (
        Pool.objects.create(host=host, name="old", guid="1", state="ONLINE", observed_at=timezone.now())
        if used
        else None
    )
    for i in range(1, n + 1):
        Disk.objects.create(
            host=host,
            name=f"vd{i}",
            path=f"/dev/vd{i}",
            by_id=D(i),
            size=4 * 1024**4,
            media="hdd",
            pool=pool if i in used else None,
            vdev_role="data" if i in used else "",
            observed_at=timezone.now(),
        )


def test_only_free_disks_are_offered(admin_client, local_host):
    disks(local_host, used=(1,))
    page = admin_client.get("/pools/create/").content.decode()
    assert D(2) in page and f'value="{D(1)}"' not in page


def test_the_preview_estimates_space_and_speed(admin_client, local_host):
    disks(local_host)
    response = admin_client.post(
        "/pools/create/",
        {
            "name": "tank",
            "layout": "raidz2",
            "disks": [D(i) for i in range(1, 7)],
            "ashift": 12,
            "compression": "lz4",
            "atime": "off",
            "xattr": "sa",
            "casesensitivity": "sensitive",
            "sync": "standard",
            "preview": "1",
        },
        headers={"HX-Request": "true"},
    )
    text = response.content.decode()
    assert response.status_code == 200 and 'id="pool-estimate"' in text and "<html" not in text
    assert "16.0\xa0TB usable" in text  # 4 data disks × 4 TiB (filesizeformat uses a no-break space)
    assert "800 MB/s read" in text and "150 IOPS" in text
    assert not Operation.objects.exists()


def test_submitting_queues_a_pool_create_operation_with_the_exact_argv(
    admin_client, local_host, django_capture_on_commit_callbacks
):
    disks(local_host)
    form = {
        "name": "tank",
        "layout": "mirror",
        "disks": [D(1), D(2), D(3), D(4)],
        "disks_per_vdev": 2,
        "log_layout": "mirror",
        "log_disks": [D(5), D(6)],
        "ashift": 12,
        "autotrim": "on",
        "compression": "lz4",
        "atime": "off",
        "xattr": "sa",
        "casesensitivity": "sensitive",
        "sync": "standard",
    }
    with django_capture_on_commit_callbacks(execute=False):
        response = admin_client.post("/pools/create/", form)
    op = Operation.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/operations/{op.pk}/"
    assert op.kind == "pools.create" and op.params["argvs"] == [
        [
            "zpool",
            "create",
            "-o",
            "ashift=12",
            "-o",
            "autotrim=on",
            "-O",
            "compression=lz4",
            "-O",
            "atime=off",
            "-O",
            "xattr=sa",
            "-O",
            "casesensitivity=sensitive",
            "-O",
            "sync=standard",
            "--",
            "tank",
            "mirror",
            D(1),
            D(2),
            "mirror",
            D(3),
            D(4),
            "log",
            "mirror",
            D(5),
            D(6),
        ]
    ]


def test_bad_requests_name_the_field_and_queue_nothing(admin_client, local_host):
    disks(local_host)
    base = {
        "layout": "raidz2",
        "ashift": 12,
        "compression": "lz4",
        "atime": "off",
        "xattr": "sa",
        "casesensitivity": "sensitive",
        "sync": "standard",
    }
    cases = [
        ({"name": "mirror", "disks": [D(1), D(2), D(3)]}, "name", "reserved"),
        ({"name": "tank", "disks": [D(1), D(2)]}, "disks", "raidz2 needs at least 3 disks"),
        ({"name": "tank", "disks": [D(1), D(2), D(3)], "disks_per_vdev": 2}, "disks_per_vdev", "do not split"),
        ({"name": "tank", "disks": [D(1), D(2), D(3)], "spare_disks": [D(3)]}, "disks", "one role"),
        ({"name": "tank", "disks": ["/dev/disk/by-id/not-here", D(2), D(3)]}, "disks", "not one of the available"),
    ]
    for extra, field, message in cases:
        response = admin_client.post("/pools/create/", {**base, **extra})
        errors = response.context["form"].errors
        assert message in " ".join(errors.get(field, [])), (extra, errors)
    assert not Operation.objects.exists()


def test_the_pool_page_offers_disk_actions_to_admins_only(admin_client, operator_client, local_host):

    disks(local_host, n=3)
    pool = Pool.objects.create(host=local_host, name="tank", guid="1", state="ONLINE", observed_at=timezone.now())
    mirror = Vdev.objects.create(pool=pool, position=1, name="mirror-0", type="mirror", role="data", state="ONLINE")
    Vdev.objects.create(
        pool=pool,
        parent=mirror,
        position=2,
        depth=1,
        name="virtio-zfsdisk1-part1",
        type="disk",
        role="data",
        state="ONLINE",
        path=D(1) + "-part1",
    )
    admin_page = admin_client.get(f"/pools/{pool.pk}/").content.decode()
    assert "?action=replace&amp;" in admin_page and "?action=offline&amp;" in admin_page  # each to its confirmation
    operator_page = operator_client.get(f"/pools/{pool.pk}/").content.decode()
    assert "?action=replace" not in operator_page and "Scrub now" in operator_page


def test_a_host_whose_disks_were_never_read_is_not_said_to_have_none(admin_client, local_host):
    page = " ".join(admin_client.get("/pools/create/").content.decode().split())
    assert "Tarn has not read local's disks yet" in page and "has no free disks" not in page
    assert 'action="/pools/refresh/"' in page and "Refresh inventory</button> reads its" in page
    op = Operation.objects.create(host=local_host, kind="pools.refresh", target="host:local:inventory")
    page = admin_client.get("/pools/create/").content.decode()
    assert f'href="/operations/{op.pk}/">follow the refresh</a>' in page


def test_a_host_read_without_free_disks_says_so(admin_client, local_host):
    disks(local_host, n=2, used=(1, 2))
    page = admin_client.get("/pools/create/").content.decode()
    assert "local has no free disks (as read" in page and "has not read" not in page
