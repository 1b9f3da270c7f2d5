"""Configuration backups, made and restored through the real path (the operation's runner, SQLite's backup API, age):
a round trip brings back what was there and keeps what was live first; every bad input is refused with the field
named and the live state unchanged; the passphrase reaches no row, no log and no audit entry."""

import io
import json
import sqlite3
import tarfile

import pyrage
import pytest
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.urls import reverse
from django.utils import timezone

from analytics.models import Alert
from analytics.services import alerts_evaluate
from appliance.models import AuditEntry, Host, Operation
from backups import archive, database, services
from backups.choices import Origin
from backups.models import Backup, BackupSchedule

PASS = "canary-7f3e correct horse battery"


def _backup(run_queued, user, passphrase=PASS) -> Backup:
    op = run_queued(
        services.backup_start, user=user, passphrase=passphrase, passphrase_confirm=passphrase, include_series=False
    )
    assert op.status == "succeeded", op.message
    return Backup.objects.get()


def _check(run_queued, backup, user, passphrase=PASS) -> Operation:
    return run_queued(services.backup_restore_start, backup=backup, user=user, passphrase=passphrase, dry_run=True)


def _hosts() -> list[str]:
    return sorted(Host.objects.exclude(name="local").values_list("name", flat=True))


@pytest.mark.django_db(transaction=True)
def test_a_backup_checked_and_restored_brings_back_what_was_there_and_keeps_the_state_before(
    data_dir, run_queued, admin_user
):
    Host.objects.create(name="nas1", address="10.0.0.5", host_keys="ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOnas1")
    backup = _backup(run_queued, admin_user)
    path = services.path_of(backup)
    raw = path.read_bytes()
    assert raw.startswith(archive.MAGIC) and PASS.encode() not in raw
    assert b"nas1" not in raw and b"SQLite format" not in raw  # sealed: nothing readable
    assert "nas1" in backup.manifest["hosts"] and backup.manifest["counts"]["hosts"] == Host.objects.count()
    # After the backup: nas1 goes, nas2 comes, a user is added.
    Host.objects.filter(name="nas1").delete()
    Host.objects.create(name="nas2", address="10.0.0.6")
    get_user_model().objects.create_user("mallory", password="x" * 16)

    op = _check(run_queued, backup, admin_user)
    assert op.status == "succeeded", op.message
    assert "Nothing was changed" in op.message
    backup.refresh_from_db()
    hosts = next(s for s in backup.checked["sections"] if s["model"].startswith("Hosts"))
    users = next(s for s in backup.checked["sections"] if s["model"].startswith("Users"))
    assert hosts["added"] == ["nas1"] and hosts["removed"] == ["nas2"]
    assert len(users["removed"]) == 1 and users["removed"][0].startswith("#")
    assert " mallory (" in users["removed"][0] and "role='viewer'" in users["removed"][0]  # a security row: its values
    assert "password=(secret)" in users["removed"][0]
    assert backup.checked["made_here"] is True and backup.checked["sha256"] == archive.digest(raw)
    assert backup.checked["secrets"] == []  # the same install
    assert _hosts() == ["nas2"]  # the dry run changed nothing

    op = run_queued(
        services.backup_restore_start,
        backup=backup,
        user=admin_user,
        passphrase=PASS,
        dry_run=False,
        confirm=backup.name,
    )
    # The restore's own operation lives on in the restored database, finished.
    done = Operation.objects.get(kind="backups.restore")
    assert done.status == "succeeded", done.message
    assert f"Restored {backup.name}" in done.message
    assert _hosts() == ["nas1"]
    assert Host.objects.get(name="nas1").host_keys.endswith("nas1")  # pinned key back
    assert not get_user_model().objects.filter(username="mallory").exists()
    kept = Backup.objects.get(origin=Origin.PRE_RESTORE)
    assert services.path_of(kept).exists()
    assert Backup.objects.filter(name=backup.name).exists()  # made after its own snapshot: listed again
    assert AuditEntry.objects.filter(argv__0="config-restore", username=admin_user.username).exists()
    # The state kept before the restore opens with the same passphrase and holds nas2 and mallory.
    members = services.backup_open(services.path_of(kept).read_bytes(), PASS)
    with database.opened(members[archive.DATABASE]) as alias:
        assert list(Host.objects.using(alias).exclude(name="local").values_list("name", flat=True)) == ["nas2"]
    for row in [*Operation.objects.all(), *AuditEntry.objects.all()]:
        assert PASS not in json.dumps(
            [getattr(row, "params", None), getattr(row, "message", ""), row.log if hasattr(row, "log") else ""]
        )


@pytest.mark.django_db(transaction=True)
def test_wrong_empty_cut_altered_and_foreign_files_change_nothing_and_name_the_field(data_dir, run_queued, admin_user):
    Host.objects.create(name="nas1", address="10.0.0.5")
    backup = _backup(run_queued, admin_user)
    good = services.path_of(backup).read_bytes()

    def refused(data: bytes, passphrase=PASS) -> dict:
        with pytest.raises(ValidationError) as caught:
            services.backup_open(data, passphrase)
        return caught.value.message_dict

    assert "Wrong passphrase" in refused(good, "not the passphrase at all")["passphrase"][0]
    assert "Give the backup's passphrase" in refused(good, "")["passphrase"][0]
    assert "cut short" in refused(good[:-200])["file"][0]
    altered = bytearray(good)
    altered[len(good) // 2] ^= 0x01
    assert "altered" in refused(bytes(altered))["file"][0]
    assert "not a Tarn configuration backup" in refused(b"PK\x03\x04 a zip file")["file"][0]
    age_file = pyrage.passphrase.encrypt(b"hello", PASS)
    assert "an age file" in refused(age_file)["file"][0]
    # Through the operation: a wrong passphrase fails the check, and nothing is kept as checked.
    op = _check(run_queued, backup, admin_user, passphrase="a wrong passphrase here")
    assert op.status == "failed" and "Wrong passphrase" in op.message
    backup.refresh_from_db()
    assert backup.checked == {} and _hosts() == ["nas1"]
    # Restore refuses before a check, an empty passphrase, and a name not typed.
    for kwargs, field in [
        ({"passphrase": PASS, "confirm": backup.name}, "backup"),
        ({"passphrase": "", "confirm": backup.name}, "passphrase"),
    ]:
        with pytest.raises(ValidationError) as caught:
            services.backup_restore_start(backup=backup, user=admin_user, dry_run=False, **kwargs)
        assert field in caught.value.message_dict
    Backup.objects.filter(pk=backup.pk).update(checked_at=timezone.now(), checked={"sha256": backup.sha256})
    backup.refresh_from_db()
    with pytest.raises(ValidationError) as caught:
        services.backup_restore_start(backup=backup, user=admin_user, dry_run=False, passphrase=PASS, confirm="nope")
    assert "confirm" in caught.value.message_dict
    assert not Operation.objects.filter(kind="backups.restore").exists()


KEY = {}


def _sealed(members: dict[str, bytes], *, links=(), raw_names=()) -> bytes:
    """A backup file built by hand (what an attacker could hand an admin): the given members, links, odd names."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        for name, target in links:
            info = tarfile.TarInfo(name)
            info.type, info.linkname = tarfile.SYMTYPE, target
            tar.addfile(info)
        for name in raw_names:
            info = tarfile.TarInfo(name)
            info.size = 1
            tar.addfile(info, io.BytesIO(b"x"))
    recipient, wrapped = KEY.get("pair") or KEY.setdefault("pair", archive.new_key(PASS))  # one scrypt, not five
    return (
        archive.MAGIC
        + wrapped.encode()
        + b"\n"
        + pyrage.encrypt(buffer.getvalue(), [pyrage.x25519.Recipient.from_str(recipient)])
    )


@pytest.mark.django_db(transaction=True)
def test_a_tar_with_dotdot_paths_links_or_no_secrets_is_refused(data_dir, run_queued, admin_user):
    backup = _backup(run_queued, admin_user)
    members = services.backup_open(services.path_of(backup).read_bytes(), PASS)
    for data, said in [
        (_sealed(members, raw_names=["../../etc/cron.d/evil"]), "outside its folder"),
        (_sealed(members, raw_names=["/etc/passwd"]), "outside its folder"),
        (
            _sealed(
                {k: v for k, v in members.items() if k != archive.SSH_KEY},
                links=[(archive.SSH_KEY, "/root/.ssh/id_ed25519")],
            ),
            "a link",
        ),
        (_sealed({**members, "secrets/extra": b"x"}), "does not write"),
        (_sealed({k: v for k, v in members.items() if not k.startswith("secrets/")}), "holds no secrets"),
    ]:
        with pytest.raises(ValidationError) as caught:
            services.backup_open(data, PASS)
        assert said in caught.value.message_dict["file"][0]
    assert not (data_dir.parent / "etc").exists()


def _with_database(members: dict[str, bytes], sql: str) -> dict[str, bytes]:
    db = sqlite3.connect(":memory:")
    db.deserialize(members[archive.DATABASE])
    db.executescript(sql)
    return {**members, archive.DATABASE: db.serialize()}


@pytest.mark.django_db(transaction=True)
def test_a_newer_tarns_backup_and_a_failing_migration_are_refused_and_the_live_state_stays(
    data_dir, run_queued, admin_user
):
    Host.objects.create(name="live", address="10.0.0.9")
    backup = _backup(run_queued, admin_user)
    members = services.backup_open(services.path_of(backup).read_bytes(), PASS)
    newer = _with_database(
        members,
        "INSERT INTO django_migrations (app, name, applied) VALUES ('appliance', '9999_from_the_future', '2030-01-01');",
    )
    with pytest.raises(ValidationError) as caught:
        services.dry_run(newer)
    assert (
        "newer Tarn" in caught.value.message_dict["file"][0]
        and "appliance.9999_from_the_future" in caught.value.message_dict["file"][0]
    )
    # An older backup whose last migration fails halfway (its table already there): nothing restored.
    failing = _with_database(
        members, "DELETE FROM django_migrations WHERE app='backups'; DELETE FROM appliance_host WHERE name != 'local';"
    )
    with pytest.raises(ValidationError) as caught:
        services.backup_restore(failing, passphrase=PASS, op=None, source="failing", log=lambda line: None, accept=True)
    assert "failed a migration" in caught.value.message_dict["file"][0]
    assert _hosts() == ["live"]
    assert not Backup.objects.filter(origin=Origin.PRE_RESTORE).exists()


@pytest.mark.django_db(transaction=True)
def test_an_upload_too_large_or_of_another_format_is_refused_before_it_is_kept(data_dir, admin_client, monkeypatch):
    huge = admin_client.post(
        reverse("backup-upload"),
        data=b"x" * 1024,
        content_type="multipart/form-data; boundary=xx",
        CONTENT_LENGTH=str(10 << 30),
    )
    assert huge.status_code == 413 and "10240 MiB" in huge.content.decode()
    monkeypatch.setattr(services, "MAX_UPLOAD", 100 << 10)
    big = io.BytesIO(archive.MAGIC + b"x" * (400 << 10))
    big.name = "big.tarnbackup"
    too_big = admin_client.post(reverse("backup-upload"), {"file": big})
    assert too_big.status_code == 413 and "larger than" in too_big.content.decode()
    other = io.BytesIO(b"\x89PNG\r\n not a backup")
    other.name = "photo.tarnbackup"
    response = admin_client.post(reverse("backup-upload"), {"file": other})
    assert response.status_code == 400 and "not a Tarn configuration backup" in response.content.decode()
    assert not Backup.objects.exists()
    assert not list((data_dir / "backups").glob("*.tarnbackup"))


@pytest.mark.django_db(transaction=True)
def test_an_uploaded_backup_is_checked_and_shows_its_diff_on_its_page(data_dir, run_queued, admin_user, admin_client):
    Host.objects.create(name="nas1", address="10.0.0.5")
    made = _backup(run_queued, admin_user)
    data = services.path_of(made).read_bytes()
    upload = io.BytesIO(data)
    upload.name = "mine.tarnbackup"
    response = admin_client.post(reverse("backup-upload"), {"file": upload})
    assert response.status_code == 302
    uploaded = Backup.objects.get(origin=Origin.UPLOADED)
    assert services.path_of(uploaded).read_bytes() == data
    Host.objects.filter(name="nas1").delete()
    op = _check(run_queued, uploaded, admin_user)
    assert op.status == "succeeded", op.message
    page = admin_client.get(reverse("backup-detail", args=[uploaded.pk])).content.decode()
    assert 'id="diff-table"' in page and "nas1" in page and 'id="restore-form"' in page
    response = admin_client.post(
        reverse("backup-restore", args=[uploaded.pk]), {"passphrase": PASS, "confirm": "wrong"}
    )
    assert response.status_code == 400 and f"Type {uploaded.name}" in response.content.decode()


@pytest.mark.django_db(transaction=True)
def test_the_schedule_needs_a_passphrase_runs_once_per_slot_keeps_n_and_alerts_on_failure(
    data_dir, run_queued, admin_user
):
    with pytest.raises(ValidationError) as caught:
        services.schedule_save(enabled=True, every="day", hour=1, keep=2)
    assert "passphrase" in caught.value.message_dict
    with pytest.raises(ValidationError) as caught:
        services.schedule_save(
            enabled=True, every="day", hour=1, keep=0, passphrase=PASS, passphrase_confirm=PASS + "x"
        )
    assert {"keep", "passphrase_confirm"} <= set(caught.value.message_dict)
    schedule = services.schedule_save(
        enabled=True, every="day", hour=1, keep=2, passphrase=PASS, passphrase_confirm=PASS
    )
    assert schedule.recipient.startswith("age1") and PASS not in schedule.wrapped_key
    BackupSchedule.objects.filter(pk=schedule.pk).update(created_at=timezone.now() - timezone.timedelta(days=10))
    start = timezone.now().replace(hour=2, minute=0, second=0, microsecond=0)
    for day in range(3):
        now = start - timezone.timedelta(days=2 - day)
        op = run_queued(services.backups_run_due, now=now)
        assert op is not None and op.status == "succeeded", op and op.message
        assert run_queued(services.backups_run_due, now=now + timezone.timedelta(minutes=5)) is None  # same slot
    kept = Backup.objects.filter(origin=Origin.SCHEDULED)
    assert kept.count() == 2 and len(list((data_dir / "backups").glob("tarn-*.tarnbackup"))) == 2
    assert services.backup_open(services.path_of(kept.first()).read_bytes(), PASS)[archive.MANIFEST]
    # A failure (the database cannot be copied: simulated by a backup folder that is a file) raises the alert.
    for b in Backup.objects.all():
        services.path_of(b).unlink()
    (data_dir / "backups").rmdir()
    (data_dir / "backups").write_text("in the way")
    op = run_queued(services.backups_run_due, now=start + timezone.timedelta(days=1))
    assert op.status == "failed"
    raised, _ = alerts_evaluate(host=None)
    assert [a.rule for a in raised] == ["backup_failed"] and Alert.objects.get(rule="backup_failed").host is None
    (data_dir / "backups").unlink()
    op = run_queued(services.backups_run_due, now=start + timezone.timedelta(days=2))
    assert op.status == "succeeded", op.message
    _, cleared = alerts_evaluate(host=None)
    assert [a.rule for a in cleared] == ["backup_failed"]


@pytest.mark.django_db(transaction=True)
def test_the_api_names_the_field_keeps_the_passphrase_out_of_the_audit_and_downloads_the_file(
    data_dir, run_queued, admin_user, admin_client
):
    response = admin_client.post(
        "/api/v1/config-backups/now/",
        {"passphrase": PASS, "passphrase_confirm": PASS + "!"},
        content_type="application/json",
    )
    assert response.status_code == 400 and "passphrase_confirm" in response.json()
    response = admin_client.post(
        "/api/v1/config-backups/now/", {"passphrase": "short"}, content_type="application/json"
    )
    assert response.status_code == 400 and "passphrase" in response.json()
    assert not Operation.objects.filter(kind="backups.backup").exists()
    backup = _backup(run_queued, admin_user)
    download = admin_client.get(f"/api/v1/config-backups/{backup.pk}/download/")
    assert download.status_code == 200
    assert b"".join(download.streaming_content) == services.path_of(backup).read_bytes()
    page = admin_client.get(reverse("backup-download", args=[backup.pk]))
    assert b"".join(page.streaming_content).startswith(archive.MAGIC)
    audited = json.dumps(list(AuditEntry.objects.values_list("params", flat=True)))
    assert PASS not in audited and "passphrase" in audited  # the field is there, masked


def test_the_schedule_form_chooses_the_weekday_by_name_and_the_page_shows_the_next_backup(data_dir, admin_client):
    """The weekday was a number to type (0-6: is 0 Sunday?); it is a dropdown of names now."""
    form = {"enabled": "on", "every": "week", "weekday": "4", "day": "1", "hour": "5", "keep": "7"}
    form |= {"passphrase": PASS, "passphrase_confirm": PASS}
    assert admin_client.post(reverse("backup-schedule"), form).status_code == 302
    schedule = BackupSchedule.objects.get()
    assert (schedule.every, schedule.weekday, schedule.hour) == ("week", 4, 5)
    page = admin_client.get(reverse("backup-list")).content.decode()
    assert '<option value="4" selected>Friday</option>' in page
    assert f"every week on Friday at 5:00 (next Fri {timezone.localtime(schedule.next_run):%Y-%m-%d} 05:00)" in page
    sunday = admin_client.post(reverse("backup-schedule"), form | {"weekday": "7"}).content.decode()
    assert "Select a valid choice" in sunday and BackupSchedule.objects.get().weekday == 4


def test_the_dashboards_backup_panel_is_shown_to_admins_only_as_its_page_is(data_dir, admin_client, viewer_client):
    """No backup yet: the panel asks an admin to make one; a viewer, whom /backups/ refuses, sees no link to it."""
    assert "Configuration backup" in admin_client.get("/").content.decode()
    page = viewer_client.get("/").content.decode()
    assert viewer_client.get("/backups/").status_code == 403
    assert "Configuration backup" not in page and 'href="/backups/"' not in page
