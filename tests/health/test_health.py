"""Disk health over a FakeHost that answers smartctl with what the lab's disks printed (tests/fixtures/host/smart):
what a pass stores, the states and alerts it leads to, the pages and the API. What smartctl does to real disks is
the lab's to prove (tests/lab/test_health.py)."""

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from analytics.models import Alert
from analytics.services import alerts_evaluate
from appliance.choices import Weekday
from appliance.models import Host, Operation
from appliance.schedules import slot_last, slot_next
from health import selectors, services
from health.models import DiskHealth, HealthPass, SelfTestRun, SelfTestSchedule, TemperaturePoint
from hostlib.errors import CommandTimeout
from pools.models import Disk, Pool, Vdev
from tests.hostlib.test_smart import VIRTIO
from tests.support.pages import shown_again
from tests.support.runners import FIXTURES, FakeHost

SMART = FIXTURES / "smart"
READ = ("smartctl", "-n", "standby", "-j", "-x")


def out(name: str) -> str:
    return (SMART / name).read_text()


@pytest.fixture
def host(db):
    host = Host.objects.create(name="nas1", address="10.0.0.5", facts={"zfs_version": "zfs-2.3.2"})
    now = timezone.now()
    pool = Pool.objects.create(host=host, name="tank", guid="1", state="ONLINE", size=4 << 30, observed_at=now)
    Vdev.objects.create(pool=pool, name="mirror-0", type="mirror", role="data", position=0, state="ONLINE")
    for position, (name, path) in enumerate([("sda", "/dev/disk/by-id/ata-TarnLab_HDD_TARNSATA1")], start=1):
        Vdev.objects.create(
            pool=pool, name=name, type="disk", role="data", position=position, state="ONLINE", path=path
        )
    for name, by_id, in_pool in [
        ("sda", "/dev/disk/by-id/ata-TarnLab_HDD_TARNSATA1", True),
        ("sdb", "/dev/disk/by-id/ata-TarnLab_SSD_TARNSATA2", False),
        ("nvme0n1", "/dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_TARNNVME1", False),
        ("vdb", "/dev/disk/by-id/virtio-zfsdisk1", False),
    ]:
        Disk.objects.create(
            host=host,
            name=name,
            path=f"/dev/{name}",
            by_id=by_id,
            size=2 << 30,
            media="hdd",
            pool=pool if in_pool else None,
            vdev_role="data" if in_pool else "",
            observed_at=now,
        )
    return host


@pytest.fixture
def fake(monkeypatch):
    fake = FakeHost()
    fake.answer("smartctl", "--scan", "-j", stdout=out("lab/scan.json"))
    fake.answer("smartctl", "--scan-open", "-j", stdout=out("lab/scan-open.json"))
    fake.answer(*READ, "-d", "sat", "--", "/dev/sda", stdout=out("lab/sata-hdd.json"), returncode=4)
    fake.answer(*READ, "-d", "sat", "--", "/dev/sdb", stdout=out("lab/sata-ssd.json"), returncode=4)
    fake.answer(*READ, "-d", "nvme", "--", "/dev/nvme0", stdout=out("lab/nvme.json"))
    fake.answer(*READ, "--", "/dev/vdb", stdout=out("lab/virtio.json"), returncode=1)
    return fake.install(monkeypatch)


def rows(host) -> dict:
    return {r.name: r for r in DiskHealth.objects.filter(host=host)}


def test_a_pass_reads_every_disk_once_and_gives_each_its_state(host, fake):
    record = services.health_read(host=host)
    assert record.error == "" and record.disks == 4
    found = rows(host)
    assert {n: r.state for n, r in found.items()} == {"sda": "ok", "sdb": "ok", "nvme0n1": "ok", "vdb": "unsupported"}
    sda = found["sda"]
    assert (sda.model, sda.serial, sda.rotation, sda.protocol, sda.dtype) == (
        "TarnLab HDD",
        "TARNSATA1",
        7200,
        "ATA",
        "sat",
    )
    assert sda.flags == ["command"] and sda.self_test_kinds == ["short", "long"] and len(sda.attributes) == 7
    assert found["sdb"].rotation == 0 and found["nvme0n1"].nvme["critical_warning"] == 0
    assert found["vdb"].reasons == [VIRTIO]
    assert TemperaturePoint.objects.count() == 3  # the virtio disk has none
    reads = [a for a in fake.argvs if a[:2] == ["smartctl", "-n"]]
    assert len(reads) == 4 and all(a[1:3] == ["-n", "standby"] for a in reads)  # never a read that wakes a disk
    assert [a[1] for a in fake.argvs if a[1].startswith("--scan")] == ["--scan", "--scan-open"]  # new disks: types
    fake.reset()
    services.health_read(host=host)  # known disks: --scan opens none, and each read names its type
    assert [a[1] for a in fake.argvs if a[1].startswith("--scan")] == ["--scan"]
    assert [a[5:7] for a in fake.argvs if a[-1] in ("/dev/sda", "/dev/sdb")] == [["-d", "sat"], ["-d", "sat"]]


def test_a_disk_without_smart_is_asked_again_a_day_later_not_every_pass(host, fake):
    now = timezone.now()
    services.health_read(host=host, now=now)
    fake.reset()
    services.health_read(host=host, now=now + timedelta(minutes=10))
    assert not any(a[-1] == "/dev/vdb" for a in fake.argvs)
    services.health_read(host=host, now=now + timedelta(hours=25))
    assert any(a[-1] == "/dev/vdb" for a in fake.argvs)


def test_one_disk_that_does_not_answer_holds_up_no_other_and_is_alerted(host, fake):
    services.health_read(host=host)

    def hang(argv):
        raise CommandTimeout(argv, 30)

    fake.on(*READ, "-d", "sat", "--", "/dev/sdb", call=hang)
    services.health_read(host=host)
    found = rows(host)
    assert (found["sdb"].power, found["sdb"].power_note, found["sdb"].shown) == (
        "silent",
        "no answer within 30 s",
        "silent",
    )
    assert found["sdb"].state == "ok" and found["sdb"].model == "TarnLab SSD"  # what it said before stays
    assert found["sda"].state == "ok" and found["nvme0n1"].state == "ok"
    raised, _ = alerts_evaluate(host=host, deliver=lambda *a: None)
    assert [(a.rule, a.subject) for a in raised] == [("disk_silent", "TARNSATA2")]
    # The disk list, the vdev tree and the dashboard say what the disk page says: not answering, and why
    notes = selectors.disk_notes(host=host, disks=Disk.objects.filter(host=host))
    assert (notes["sdb"]["state"], notes["sdb"]["label"], notes["sdb"]["reason"]) == (
        "silent",
        "Not answering",
        "no answer within 30 s",
    )
    assert notes["sda"]["state"] == "ok"
    panel = selectors.dashboard_health(hosts=[host])["extra_panels"][0][1]
    assert [d.name for d in panel["disks"]] == ["sdb"]


def test_an_nvme_critical_warning_raises_alerts_once_and_they_clear_when_it_ends(host, fake):
    fake.answer(*READ, "-d", "nvme", "--", "/dev/nvme0", stdout=out("lab/nvme-critical-warning-4.json"), returncode=8)
    services.health_read(host=host)
    nvme = rows(host)["nvme0n1"]
    assert nvme.state == "failing" and nvme.flags == ["failing"] and nvme.passed is False
    raised, _ = alerts_evaluate(host=host, deliver=lambda *a: None)
    assert {a.rule for a in raised} == {"smart_failed", "nvme_warning"}
    assert "reliability degraded by media or internal errors" in Alert.objects.get(rule="nvme_warning").message
    again, _ = alerts_evaluate(host=host, deliver=lambda *a: None)
    assert again == []  # raised once
    fake.answer(*READ, "-d", "nvme", "--", "/dev/nvme0", stdout=out("lab/nvme.json"))
    services.health_read(host=host)
    _, cleared = alerts_evaluate(host=host, deliver=lambda *a: None)
    assert {a.rule for a in cleared} == {"smart_failed", "nvme_warning"}


def test_sectors_above_zero_are_watched_and_a_rise_is_said(host, fake):
    fake.answer(*READ, "-d", "sat", "--", "/dev/sda", stdout=out("real/ata-hdd-failing-smart-status.json"))
    services.health_read(host=host)
    sda = rows(host)["sda"]
    assert sda.state == "failing" and sda.counters == {"attr5": 1975, "attr197": 8, "attr198": 0} and sda.rising == []
    # The same drive read before with fewer (the stored counters of an earlier read): the next read sees them rise.
    DiskHealth.objects.filter(pk=sda.pk).update(counters={"attr5": 1900, "attr197": 8, "attr198": 0})
    services.health_read(host=host)
    assert rows(host)["sda"].rising == ["attr5"]
    raised, _ = alerts_evaluate(host=host, deliver=lambda *a: None)
    sectors = next(a for a in raised if a.rule == "smart_sectors")
    assert "reallocated sectors (5) 1975, pending sectors (197) 8" in sectors.message and "rising" in sectors.message


def test_a_host_without_smartctl_says_so_and_keeps_what_it_had(host, fake):
    services.health_read(host=host)
    fake.answer("smartctl", returncode=127, stderr="bash: line 1: smartctl: command not found\n")
    record = services.health_read(host=host)
    assert record.error == "smartctl is not installed on this host (apt install smartmontools)"
    assert rows(host)["sda"].state == "ok"


def test_a_self_test_is_refused_where_it_cannot_run_and_started_where_it_can(host, fake, admin_user, run_queued):
    services.health_read(host=host)
    with pytest.raises(Exception, match="cannot run a short self-test"):
        services.self_test_start(host=host, user=admin_user, device="/dev/nvme0", kind="short")
    with pytest.raises(Exception, match="has no disk /dev/sdz"):
        services.self_test_start(host=host, user=admin_user, device="/dev/sdz", kind="short")
    DiskHealth.objects.filter(name="sdb").update(testing=90)
    with pytest.raises(Exception, match="already running a self-test \\(90% left\\)"):
        services.self_test_start(host=host, user=admin_user, device="/dev/sdb", kind="long")
    fake.answer(*READ, "-d", "sat", "--", "/dev/sda", stdout=out("lab/sata-hdd-after-short-test.json"), returncode=4)
    op = run_queued(services.self_test_start, host=host, user=admin_user, device="/dev/sda", kind="short")
    assert op.status == "succeeded", op.message
    assert fake.mutations == [["smartctl", "-j", "-t", "short", "-d", "sat", "--", "/dev/sda"]]
    assert rows(host)["sda"].self_tests[0]["kind"] == "Short offline"


def test_the_pages_show_health_where_disks_are_listed(host, fake, admin_client, viewer_client):
    fake.answer(*READ, "-d", "sat", "--", "/dev/sda", stdout=out("real/ata-hdd-failing-smart-status.json"))
    services.health_read(host=host)
    sda = rows(host)["sda"]
    session = admin_client.session
    session["host_id"] = host.pk
    session.save()
    disks = admin_client.get("/pools/disks/").content.decode()
    assert 'data-health="failing"' in disks and 'data-health="unsupported"' in disks and "<th>Health</th>" in disks
    pool = admin_client.get(f"/pools/{Pool.objects.get().pk}/").content.decode()
    assert 'data-health="failing"' in pool and f'href="/health/disks/{sda.pk}/"' in pool
    page = admin_client.get(f"/health/disks/{sda.pk}/").content.decode()
    assert "Reallocated_Sector_Ct" in page and "Completed: read failure" in page and 'id="replace"' in page
    pool_pk = Pool.objects.get().pk  # its replacement is chosen on the page that offers only disks large enough
    assert f'href="/pools/{pool_pk}/device/?action=replace&amp;device=/dev/disk/by-id/ata-TarnLab_HDD' in page
    assert "Start</button>" in page
    listing = admin_client.get("/health/").content.decode()
    assert "Hitachi HDS721050DLE630" in listing and "Read now" in listing
    dashboard = admin_client.get("/").content.decode()
    assert 'id="disk-health"' in dashboard and "FAILING" in dashboard
    session = viewer_client.session
    session["host_id"] = host.pk
    session.save()
    seen = viewer_client.get(f"/health/disks/{sda.pk}/").content.decode()
    assert "Reallocated_Sector_Ct" in seen and "Start</button>" not in seen and 'id="replace"' not in seen


def test_disks_go_by_their_by_id_names_and_smartctl_is_quoted_in_words(host, fake, admin_client):
    services.health_read(host=host)
    session = admin_client.session
    session["host_id"] = host.pk
    session.save()
    listing = " ".join(admin_client.get("/health/").content.decode().split())
    vdb = rows(host)["vdb"]
    assert f'<a href="/health/disks/{vdb.pk}/">virtio-zfsdisk1</a> <small class="muted">vdb' in listing
    assert "a virtio disk: virtio disks report no SMART" in listing and "Unable to detect" not in listing
    sdb = " ".join(admin_client.get(f"/health/disks/{rows(host)['sdb'].pk}/").content.decode().split())
    assert "<h1>ata-TarnLab_SSD_TARNSATA2 <small" in sdb
    assert "smartctl said: a SMART command failed or a SMART structure had a bad checksum" in sdb  # exit status 4
    virtio = admin_client.get(f"/health/disks/{vdb.pk}/").content.decode()
    assert "smartctl said" not in virtio  # its exit status only says what the reason above says in words


def test_the_api_lists_reads_and_starts_a_self_test(host, fake, operator_client, viewer_client):
    services.health_read(host=host)
    listed = viewer_client.get("/api/v1/disk-health/?host=nas1").json()
    assert {d["name"]: d["state"] for d in listed["results"]}["vdb"] == "unsupported"
    sda = rows(host)["sda"]
    bad = operator_client.post(f"/api/v1/disk-health/{sda.pk}/self-test/", {"kind": "forever"}, "application/json")
    assert bad.status_code == 400 and "kind" in bad.json()
    assert viewer_client.post(f"/api/v1/disk-health/{sda.pk}/self-test/", {"kind": "short"}).status_code == 403
    started = operator_client.post(f"/api/v1/disk-health/{sda.pk}/self-test/", {"kind": "long"}, "application/json")
    assert started.status_code == 202 and Operation.objects.get(pk=started.json()["id"]).kind == "health.self_test"
    read = operator_client.post("/api/v1/disk-health/read/", {"host": "nas1"}, "application/json")
    assert read.status_code == 202 and HealthPass.objects.filter(host=host).exists()


def mirror_of_sda_and_sdb(host):
    pool = Pool.objects.get(host=host)
    mirror = Vdev.objects.get(pool=pool, name="mirror-0")
    Vdev.objects.filter(pool=pool, name="sda").update(parent=mirror)
    path = "/dev/disk/by-id/ata-TarnLab_SSD_TARNSATA2"
    Vdev.objects.create(
        pool=pool, parent=mirror, name="sdb", type="disk", role="data", position=2, state="ONLINE", path=path
    )
    Disk.objects.filter(host=host, name="sdb").update(pool=pool, vdev_role="data")
    return pool


def logs_a_test_once_started(fake, device, before="lab/sata-hdd.json", after="lab/sata-hdd-after-short-test.json"):
    """The drive's read shows the test in its log only once smartctl -t went to it (as the lab's SATA disks do)."""
    fake.answer(*READ, "-d", "sat", "--", device, stdout=out(before), returncode=4)
    fake.on(
        "smartctl",
        "-j",
        "-t",
        "short",
        "-d",
        "sat",
        "--",
        device,
        call=lambda argv: fake.answer(*READ, "-d", "sat", "--", device, stdout=out(after), returncode=4),
    )


def test_every_disk_is_tested_one_per_vdev_at_a_time_and_a_scrubbing_pool_waits(host, fake, admin_user, run_queued):
    services.health_read(host=host)
    pool = mirror_of_sda_and_sdb(host)
    assert services.run_groups(host=host, kind="short") == [["/dev/sda"], ["/dev/sdb"]]  # NVMe and virtio: no tests
    logs_a_test_once_started(fake, "/dev/sda")
    logs_a_test_once_started(fake, "/dev/sdb", before="lab/sata-ssd.json")
    run = run_queued(services.self_test_run_start, host=host, user=admin_user, kind="short")
    assert fake.mutations == [["smartctl", "-j", "-t", "short", "-d", "sat", "--", "/dev/sda"]]  # sdb waits its turn
    with pytest.raises(Exception, match="already running"):
        services.self_test_run_start(host=host, user=admin_user, kind="long")
    read = lambda: run_queued(services.health_read_start, host=host, user=admin_user)  # noqa: E731
    read()  # sda's test is in its log now: sdb starts
    run.refresh_from_db()
    assert run.results == {"/dev/sda": "passed"} and run.current == 1 and run.status == "running"
    assert fake.mutations[-1][-1] == "/dev/sdb"
    read()
    run.refresh_from_db()
    assert run.status == "succeeded" and run.results == {"/dev/sda": "passed", "/dev/sdb": "passed"}

    Pool.objects.filter(pk=pool.pk).update(scan_function="SCRUB", scan_state="SCANNING")
    fake.reset()
    scrubbing = run_queued(services.self_test_run_start, host=host, user=admin_user, kind="long")
    scrubbing.refresh_from_db()
    assert scrubbing.status == "succeeded" and fake.mutations == []
    assert set(scrubbing.results.values()) == {"skipped: pool tank is scrubbing or resilvering"}


def test_a_disk_gone_mid_run_is_skipped_saying_so(host, fake, admin_user, run_queued):
    services.health_read(host=host)
    mirror_of_sda_and_sdb(host)
    run = run_queued(services.self_test_run_start, host=host, user=admin_user, kind="short")
    scan = json.loads(out("lab/scan.json"))
    scan["devices"] = [d for d in scan["devices"] if d["name"] != "/dev/sdb"]  # pulled before its turn
    fake.answer("smartctl", "--scan", "-j", stdout=json.dumps(scan))
    Disk.objects.filter(host=host, name="sdb").delete()
    logs_a_test_once_started(fake, "/dev/sda")
    run_queued(services.health_read_start, host=host, user=admin_user)
    fake.answer(*READ, "-d", "sat", "--", "/dev/sda", stdout=out("lab/sata-hdd-after-short-test.json"), returncode=4)
    run_queued(services.health_read_start, host=host, user=admin_user)
    run.refresh_from_db()
    assert run.status == "succeeded" and run.results == {"/dev/sda": "passed", "/dev/sdb": "skipped: the disk is gone"}
    assert not DiskHealth.objects.filter(host=host, device="/dev/sdb").exists()


def test_cancelling_aborts_the_disks_testing_now(host, fake, admin_user, run_queued):
    services.health_read(host=host)
    mirror_of_sda_and_sdb(host)
    run = run_queued(services.self_test_run_start, host=host, user=admin_user, kind="short")
    op = run_queued(services.self_test_run_cancel, run=run, user=admin_user)
    run.refresh_from_db()
    assert op.status == "succeeded" and run.status == "cancelled"
    assert fake.mutations[-1] == ["smartctl", "-j", "-X", "-d", "sat", "--", "/dev/sda"]
    assert run.results == {"/dev/sda": "cancelled", "/dev/sdb": "cancelled"}
    with pytest.raises(Exception, match="no longer running"):
        services.self_test_run_cancel(run=run, user=admin_user)


def test_a_schedule_starts_once_per_slot_and_not_for_slots_before_it_was_made(host, fake, admin_user):
    services.health_read(host=host)
    schedule = services.schedule_save(host=host, kind="short", every="day", hour=2)
    tz = timezone.get_current_timezone()
    made = timezone.datetime(2026, 11, 20, 12, 0, tzinfo=tz)
    SelfTestSchedule.objects.filter(pk=schedule.pk).update(created_at=made)
    assert services.schedules_run_due(now=made + timedelta(hours=1)) == 0  # today's 02:00 was before it existed
    assert services.schedules_run_due(now=timezone.datetime(2026, 11, 21, 2, 30, tzinfo=tz)) == 1
    SelfTestRun.objects.update(status="succeeded")
    assert services.schedules_run_due(now=timezone.datetime(2026, 11, 21, 9, 0, tzinfo=tz)) == 0  # once per slot
    weekly = SelfTestSchedule(every="week", weekday=6, hour=3)
    assert slot_last(weekly, timezone.datetime(2026, 11, 28, 12, 0, tzinfo=tz)).day == 22  # a Sunday
    monthly = SelfTestSchedule(every="month", day=15, hour=1)
    assert slot_last(monthly, timezone.datetime(2026, 12, 3, 0, 0, tzinfo=tz)).month == 11
    with pytest.raises(Exception, match="hour"):
        services.schedule_save(host=host, kind="short", every="day", hour=24)


def on(client, host):
    session = client.session
    session["host_id"] = host.pk
    session.save()
    return client


def test_a_schedule_shows_its_weekday_by_name_and_its_next_run(host, viewer_client):
    weekly = services.schedule_save(host=host, kind="short", every="week", weekday=Weekday.MONDAY, hour=3)
    page = on(viewer_client, host).get("/health/").content.decode()
    assert "Every week, on Monday, at 3:00" in page
    assert f"Mon {timezone.localtime(slot_next(weekly)):%Y-%m-%d} 03:00" in page


def test_runs_and_schedules_over_the_pages_and_the_api(host, fake, operator_client, viewer_client):
    services.health_read(host=host)
    on(operator_client, host), on(viewer_client, host)
    api = operator_client.post(
        "/api/v1/self-test-schedules/",
        {"host": "nas1", "kind": "long", "every": "month", "day": 30},
        "application/json",
    )
    assert api.status_code == 400 and "day" in api.json()
    made = operator_client.post(
        "/api/v1/self-test-schedules/", {"host": "nas1", "kind": "long", "every": "month"}, "application/json"
    )
    assert made.status_code == 201 and made.json()["day"] == 1
    page = viewer_client.get("/health/").content.decode()
    assert 'id="self-test-schedules"' in page and "Add schedule" not in page and "Every month, day 1, at 2:00" in page
    run = operator_client.post("/api/v1/self-test-runs/", {"host": "nas1", "kind": "short"}, "application/json")
    assert run.status_code == 201 and run.json()["groups"] == [["/dev/sda", "/dev/sdb"]]  # no pool: all at once
    twice = operator_client.post("/api/v1/self-test-runs/", {"host": "nas1", "kind": "short"}, "application/json")
    assert twice.status_code == 400
    listing = operator_client.get("/health/").content.decode()
    assert 'id="self-test-runs"' in listing and "Cancel</button>" in listing
    assert operator_client.delete(f"/api/v1/self-test-schedules/{made.json()['id']}/").status_code == 204


def test_a_refused_run_or_schedule_stays_on_the_list_with_the_error_in_its_form(host, fake, operator_client):
    """The form's own refusal and the service's (no disk can run it yet; a read-only host) come back on the list
    page inside the form that asked; nothing is started or saved."""
    on(operator_client, host)
    run = shown_again(operator_client.post("/health/runs/new/", {"kind": "forever"}), "run-form")
    assert "Select a valid choice. forever" in run, run
    run = shown_again(operator_client.post("/health/runs/new/", {"kind": "short"}), "run-form")  # no disk read yet
    assert "No disk of nas1 can run a short self-test" in run, run
    slot = {"kind": "long", "every": "month", "weekday": 6, "day": 1}
    schedule = shown_again(operator_client.post("/health/schedules/new/", {**slot, "hour": 24}), "schedule-form")
    assert "less than or equal to 23" in schedule and 'value="24"' in schedule, schedule
    Host.objects.filter(pk=host.pk).update(read_only=True)
    schedule = shown_again(operator_client.post("/health/schedules/new/", {**slot, "hour": 2}), "schedule-form")
    assert "read-only" in schedule, schedule
    assert not SelfTestRun.objects.exists() and not SelfTestSchedule.objects.exists()
    assert not Operation.objects.exists()


def test_a_verdict_comes_only_from_a_read_that_answered_with_a_newer_log_entry(host, fake, admin_user, run_queued):
    """The drive's log before the run already ends with a passed test: that is not this run's result; a read that
    timed out after the group started says nothing either."""
    fake.answer(*READ, "-d", "sat", "--", "/dev/sda", stdout=out("lab/sata-hdd-after-short-test.json"), returncode=4)
    services.health_read(host=host)
    run = run_queued(services.self_test_run_start, host=host, user=admin_user, kind="short")  # sda and sdb: no pool

    def hang(argv):
        raise CommandTimeout(argv, 30)

    fake.on(*READ, "-d", "sat", "--", "/dev/sda", call=hang)
    run_queued(services.health_read_start, host=host, user=admin_user)
    run.refresh_from_db()
    assert run.results == {} and run.status == "running"  # sda: no answer; sdb: its log has no new entry
    fake.watchers.clear()
    run_queued(services.health_read_start, host=host, user=admin_user)  # sda answers, its log as before the run
    run.refresh_from_db()
    assert run.results == {} and run.status == "running"


def full_log(kind: str = "Short offline") -> str:
    """The lab drive's log once it holds 21 entries (QEMU logs every test at hour 4660): a new test changes nothing
    smartctl shows."""
    doc = json.loads(out("lab/sata-hdd-after-short-test.json"))
    entry = dict(doc["ata_smart_self_test_log"]["standard"]["table"][0], type={"value": 1, "string": kind})
    doc["ata_smart_self_test_log"]["standard"].update(table=[entry] * 21, count=21)
    return json.dumps(doc)


def test_a_full_log_that_reads_the_same_counts_once_the_drive_had_time_to_test(host, fake, admin_user, run_queued):
    fake.answer(*READ, "-d", "sat", "--", "/dev/sda", stdout=full_log(), returncode=4)
    fake.answer(*READ, "-d", "sat", "--", "/dev/sdb", stdout=full_log(), returncode=4)
    services.health_read(host=host)
    assert rows(host)["sda"].self_test_minutes == {"short": 2, "long": 54}
    run = run_queued(services.self_test_run_start, host=host, user=admin_user, kind="short")
    services.health_read(host=host)  # at once: the drive may not have logged it yet
    services.runs_advance(host=host, transport=fake)
    run.refresh_from_db()
    assert run.results == {} and run.status == "running"
    later = timezone.now() + timedelta(minutes=3)
    DiskHealth.objects.filter(host=host).update(answered_at=later)
    services.runs_advance(host=host, transport=fake, now=later)
    run.refresh_from_db()
    assert run.results == {"/dev/sda": "passed", "/dev/sdb": "passed"} and run.status == "succeeded"


def test_a_full_log_whose_newest_is_another_kind_is_not_this_runs_result(host, fake, admin_user, run_queued):
    fake.answer(*READ, "-d", "sat", "--", "/dev/sda", stdout=full_log("Short offline"), returncode=4)
    fake.answer(*READ, "-d", "sat", "--", "/dev/sdb", stdout=full_log("Short offline"), returncode=4)
    services.health_read(host=host)
    run = run_queued(services.self_test_run_start, host=host, user=admin_user, kind="long")
    later = timezone.now() + timedelta(hours=2)
    DiskHealth.objects.filter(host=host).update(answered_at=later)
    services.runs_advance(host=host, transport=fake, now=later)
    run.refresh_from_db()
    assert run.results == {} and run.status == "running"


def test_a_failing_disk_that_spins_down_stays_failing_and_its_alerts_stay_open(host, fake):
    fake.answer(*READ, "-d", "sat", "--", "/dev/sda", stdout=out("real/ata-hdd-failing-smart-status.json"))
    services.health_read(host=host)
    raised, _ = alerts_evaluate(host=host, deliver=lambda *a: None)
    assert {"smart_failed", "smart_sectors"} <= {a.rule for a in raised}
    asleep = {"smartctl": {"messages": [{"string": "Device is in STANDBY mode, exit(2)"}], "exit_status": 2}}
    fake.answer(*READ, "-d", "sat", "--", "/dev/sda", stdout=json.dumps(asleep), returncode=2)
    services.health_read(host=host)
    sda = rows(host)["sda"]
    assert (sda.state, sda.power, sda.shown, sda.shown_label) == ("failing", "asleep", "failing", "Failing (asleep)")
    _, cleared = alerts_evaluate(host=host, deliver=lambda *a: None)
    assert cleared == []


def test_another_drive_at_the_same_path_starts_afresh(host, fake):
    fake.answer(*READ, "-d", "sat", "--", "/dev/sda", stdout=out("real/ata-megaraid-aborted-selftest-realloc.json"))
    services.health_read(host=host)
    old = rows(host)["sda"]
    assert old.counters["attr5"] == 387 and TemperaturePoint.objects.filter(disk=old).count() == 1
    fake.answer(*READ, "-d", "sat", "--", "/dev/sda", stdout=out("real/ata-hdd-failing-smart-status.json"))
    services.health_read(host=host)
    new = rows(host)["sda"]
    assert new.pk != old.pk and new.serial != old.serial and new.rising == []  # 1975 > 387, but another drive
    assert not TemperaturePoint.objects.filter(disk_id=old.pk).exists()


def test_nothing_is_started_on_a_read_only_host_or_without_a_host(host, fake, admin_user, admin_client):
    services.health_read(host=host)
    Host.objects.filter(pk=host.pk).update(read_only=True)
    host.refresh_from_db()
    for call in (
        lambda: services.self_test_run_start(host=host, user=admin_user, kind="short"),
        lambda: services.self_test_start(host=host, user=admin_user, device="/dev/sda", kind="short"),
        lambda: services.schedule_save(host=host, kind="short", every="day"),
    ):
        with pytest.raises(Exception, match="read-only"):
            call()
    Host.objects.all().delete()
    for url, data, form_id in [
        ("/health/read/", {}, None),
        ("/health/runs/new/", {"kind": "short"}, "run-form"),
        (
            "/health/schedules/new/",
            {"kind": "long", "every": "month", "weekday": 6, "day": 1, "hour": 2},
            "schedule-form",
        ),
    ]:
        page = admin_client.post(url, data, follow=True)
        said = shown_again(page, form_id) if form_id else page.content.decode()  # a form asked: said in that form
        assert "Add a host first" in said, url


def test_smartctl_without_json_is_a_clear_error_and_the_host_waits_its_turn(host, fake):
    fake.answer("smartctl", "--scan", stdout="/dev/sda -d scsi # /dev/sda, SCSI device\n")
    record = services.health_read(host=host)
    assert record.error == "smartctl printed no JSON: Tarn needs smartctl 7.0 or newer (-j)" and record.at
    assert host not in services.health_due(now=record.at + timedelta(minutes=1))


def test_a_daily_slot_is_one_moment_when_the_clocks_go_back():
    """Europe/Berlin, 2026-10-25: 02:00–03:00 comes twice; a schedule at 2 starts once."""
    schedule = SelfTestSchedule(every="day", hour=2)
    with timezone.override("Europe/Berlin"):
        first = slot_last(schedule, timezone.datetime(2026, 10, 25, 0, 5, tzinfo=timezone.UTC))
        second = slot_last(schedule, timezone.datetime(2026, 10, 25, 1, 5, tzinfo=timezone.UTC))
    assert first == second and first.utcoffset() == timedelta(hours=2)


def test_a_finished_runs_badge_says_what_its_disks_said_not_only_that_it_ran(host, viewer_client):
    """Every group ran in each of these (succeeded), but the admin's answer is in the disks' verdicts."""
    made = {
        "1 disk failed": {"/dev/sda": "passed", "/dev/sdb": "failed: Completed: read failure"},
        "1 of 2 passed": {"/dev/sda": "passed", "/dev/sdb": "skipped: the disk is gone"},
        "All passed": {"/dev/sda": "passed", "/dev/sdb": "passed"},
    }
    for results in made.values():
        SelfTestRun.objects.create(host=host, kind="short", status="succeeded", results=results, groups=[list(results)])
    SelfTestRun.objects.create(host=host, kind="long", status="cancelled", groups=[["/dev/sda"]])
    verdicts = {run.verdict for run in SelfTestRun.objects.all()}
    assert verdicts == {
        ("failed", "1 disk failed"),
        ("stopped", "1 of 2 passed"),
        ("succeeded", "All passed"),
        ("reverted", "Cancelled"),
    }
    on(viewer_client, host)
    table = viewer_client.get("/health/").content.decode().split('id="self-test-runs"', 1)[1].split("</table>", 1)[0]
    assert '<span class="badge badge-failed">1 disk failed</span>' in table and "Succeeded" not in table
