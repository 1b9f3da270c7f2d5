"""Issue 39, findings 4 and 5 and the new-user list: a restore brings only what its dry run shows (no trigger or
view this Tarn does not make; the security tables row by row; the file that was checked; a backup this Tarn did not
sign is "made elsewhere"), a backup row's name reaches nothing outside its folder, a passphrase is one line, and a
data migration that forgets .using() never touches the live database."""

import io
import os

import pytest
from django.core.exceptions import ValidationError
from django.db.models.signals import post_migrate
from django.urls import reverse
from django.utils import timezone

from appliance import vault
from appliance.models import Host, Operation, TwoFactorPolicy
from backups import archive, services, signing
from backups.choices import MADE_ELSEWHERE, Origin
from backups.models import Backup
from backups.services import files
from encryption.models import KeyExport
from tests.backups.test_backups import PASS, _backup, _check, _hosts, _sealed, _with_database


def _members(backup: Backup) -> dict[str, bytes]:
    return services.backup_open(services.path_of(backup).read_bytes(), PASS)


def _upload(user, data: bytes) -> Backup:
    return services.upload_save(user=user, chunks=[data], size=len(data))


def _section(checked: dict, title: str) -> dict:
    return next(s for s in checked["sections"] if s["model"].startswith(title))


TRIGGER = (
    "CREATE TRIGGER promote AFTER INSERT ON appliance_auditentry BEGIN "
    "UPDATE appliance_user SET role = 'admin', is_superuser = 1; END;"
)


@pytest.mark.django_db(transaction=True)
def test_a_trigger_view_or_index_this_tarn_does_not_make_is_refused_before_anything_runs(
    data_dir, run_queued, admin_user
):
    Host.objects.create(name="live", address="10.0.0.9")
    members = _members(_backup(run_queued, admin_user))
    for sql, said in [
        (TRIGGER, "trigger promote"),
        ("CREATE VIEW everyone AS SELECT username FROM appliance_user;", "view everyone"),
        ("CREATE INDEX spare ON appliance_host (address);", "index spare"),
        ("DROP INDEX one_active_operation_per_target;", "lacks"),  # a constraint Tarn's migrations make, gone
        # Same name as Tarn's own trigger, other SQL: compared by name AND SQL.
        (
            "DROP TRIGGER appliance_audit_search_insert; CREATE TRIGGER appliance_audit_search_insert AFTER INSERT "
            "ON appliance_auditentry BEGIN UPDATE appliance_user SET role = 'admin'; END;",
            "trigger appliance_audit_search_insert",
        ),
    ]:
        with pytest.raises(ValidationError) as caught:
            services.dry_run(_with_database(members, sql))
        assert said in caught.value.message_dict["file"][0], sql
    # The restore runs the same checks: nothing restored, nothing kept before.
    with pytest.raises(ValidationError):
        services.backup_restore(
            _with_database(members, TRIGGER), passphrase=PASS, op=None, source="x", log=lambda line: None, accept=True
        )
    assert _hosts() == ["live"] and not Backup.objects.filter(origin=Origin.PRE_RESTORE).exists()
    assert services.dry_run(members)["sections"]  # the untouched backup passes


@pytest.mark.django_db(transaction=True)
def test_a_cleared_two_factor_policy_and_an_added_recovery_code_are_shown_row_by_row_on_the_page(
    data_dir, run_queued, admin_user, admin_client
):
    TwoFactorPolicy.objects.create(required_roles=["operator", "viewer"])
    members = _members(_backup(run_queued, admin_user))
    crafted = _with_database(
        members,
        "UPDATE appliance_twofactorpolicy SET required_roles = '[]'; "
        f"INSERT INTO appliance_recoverycode (user_id, code_hash, created_at) VALUES ({admin_user.pk}, "
        f"'{'2' * 64}', '2030-01-01 00:00:00'); "
        "INSERT INTO django_celery_beat_intervalschedule (every, period) VALUES (1, 'minutes'); "
        "INSERT INTO django_celery_beat_periodictask (name, task, args, kwargs, enabled, one_off, total_run_count, "
        "interval_id, headers, description, date_changed) VALUES ('sneaky', 'appliance.tasks.operation_run', "
        "'[1]', '{}', 1, 0, 0, last_insert_rowid(), '{}', '', '2030-01-01');",
    )
    crafted.pop(archive.SIGNATURE)
    uploaded = _upload(admin_user, _sealed(crafted))
    op = _check(run_queued, uploaded, admin_user)
    assert op.status == "succeeded", op.message
    uploaded.refresh_from_db()
    policy = _section(uploaded.checked, "Two-factor policy")  # one row now, one in the backup: counts hide it
    assert policy["security"] and policy["changed_count"] == 1
    assert "required_roles: ['operator', 'viewer'] → []" in policy["changed"][0]["values"]
    codes = _section(uploaded.checked, "Recovery codes")
    assert codes["added_count"] == 1 and codes["removed_count"] == 0
    assert "recovery code of alice" in codes["added"][0] and "code_hash=(secret)" in codes["added"][0]
    tasks = _section(uploaded.checked, "Periodic tasks")
    assert "'appliance.tasks.operation_run'" in tasks["added"][0] and "args='[1]'" in tasks["added"][0]
    page = admin_client.get(reverse("backup-detail", args=[uploaded.pk])).content.decode()
    assert 'id="security-table"' in page and "required_roles: [&#x27;operator&#x27;, &#x27;viewer&#x27;] → []" in page
    assert "recovery code of alice" in page and "appliance.tasks.operation_run" in page
    assert "Made elsewhere" in page  # the crafted file carries no signature of this Tarn


@pytest.mark.django_db(transaction=True)
def test_a_restore_brings_only_the_file_that_was_checked(data_dir, run_queued, admin_user):
    Host.objects.create(name="checked", address="10.0.0.5")
    first = _backup(run_queued, admin_user)
    good = services.path_of(first).read_bytes()
    Host.objects.filter(name="checked").update(name="swapped")
    run_queued(services.backup_start, user=admin_user, passphrase=PASS, passphrase_confirm=PASS)
    other = services.path_of(Backup.objects.exclude(pk=first.pk).get()).read_bytes()  # same passphrase, same Tarn
    uploaded = _upload(admin_user, good)
    assert _check(run_queued, uploaded, admin_user).status == "succeeded"
    uploaded.refresh_from_db()
    assert uploaded.checked["sha256"] == archive.digest(good)
    Host.objects.create(name="live", address="10.0.0.7")
    # The web's user owns uploads/: it swaps the checked file for another that opens with the same passphrase.
    services.path_of(uploaded).write_bytes(other)
    op = run_queued(
        services.backup_restore_start,
        backup=uploaded,
        user=admin_user,
        passphrase=PASS,
        dry_run=False,
        confirm=uploaded.name,
    )
    assert op.status == "failed" and "not the file that was checked" in op.message
    assert _hosts() == ["live", "swapped"] and not Backup.objects.filter(origin=Origin.PRE_RESTORE).exists()
    # Put back, the checked file restores.
    services.path_of(uploaded).write_bytes(good)
    run_queued(
        services.backup_restore_start,
        backup=uploaded,
        user=admin_user,
        passphrase=PASS,
        dry_run=False,
        confirm=uploaded.name,
    )
    assert Operation.objects.get(kind="backups.restore").status == "succeeded"
    assert _hosts() == ["checked"]


@pytest.mark.django_db(transaction=True)
def test_a_backup_forged_with_the_schedules_public_key_is_made_elsewhere_and_needs_accepting(
    data_dir, run_queued, admin_user, admin_client
):
    schedule = services.schedule_save(enabled=False, every="day", hour=1, passphrase=PASS, passphrase_confirm=PASS)
    genuine = _members(_backup(run_queued, admin_user))
    assert signing.made_here(genuine)
    # What the database (and the web) hold: the schedule's public key and its wrapped key. With them anyone seals a
    # backup that opens with the passphrase; its signature (copied from a real one) no longer fits its contents.
    forged = _with_database(  # and every later backup sealed to the forger's key
        genuine,
        "UPDATE appliance_user SET email = 'mallory@example.org'; UPDATE backups_backupschedule SET "
        "recipient = 'age1forger';",
    )
    sealed = archive.seal(forged, recipient=schedule.recipient, wrapped=schedule.wrapped_key)
    uploaded = _upload(admin_user, sealed)
    assert _check(run_queued, uploaded, admin_user).status == "succeeded"
    uploaded.refresh_from_db()
    assert uploaded.checked["made_here"] is False
    plan = _section(uploaded.checked, "Backup schedules")
    assert plan["security"] and f"recipient: {schedule.recipient!r} → 'age1forger'" in plan["changed"][0]["values"]
    page = admin_client.get(reverse("backup-detail", args=[uploaded.pk])).content.decode()
    assert 'id="made-by" class="warning">Made elsewhere' in page
    with pytest.raises(ValidationError) as caught:
        services.backup_restore_start(
            backup=uploaded, user=admin_user, passphrase=PASS, dry_run=False, confirm=uploaded.name, accept="yes"
        )
    assert MADE_ELSEWHERE in caught.value.message_dict["accept"][0]
    response = admin_client.post(
        reverse("backup-restore", args=[uploaded.pk]), {"passphrase": PASS, "confirm": uploaded.name}
    )
    assert response.status_code == 400 and "made elsewhere" in response.content.decode()
    with pytest.raises(ValidationError) as caught:  # the restore itself checks again
        services.backup_restore(forged, passphrase=PASS, op=None, source="forged", log=lambda line: None, accept=False)
    assert "accept" in caught.value.message_dict
    assert not Operation.objects.filter(kind="backups.restore").exists()
    # Typed, it may go ahead (an admin who knows where it comes from).
    op = services.backup_restore_start(
        backup=uploaded, user=admin_user, passphrase=PASS, dry_run=False, confirm=uploaded.name, accept=MADE_ELSEWHERE
    )
    assert op.params["made_elsewhere"] is True and op.params["sha256"] == archive.digest(sealed)
    # The key that signs is root's alone and never in a backup.
    key = vault.vault_dir() / signing.KEY
    assert key.stat().st_mode & 0o777 == 0o600 and not any(key.read_bytes() in v for v in genuine.values())


@pytest.mark.django_db(transaction=True)
def test_a_data_migration_that_forgets_using_changes_the_copy_not_the_live_database(data_dir, run_queued, admin_user):
    """The bug a dry run had: migrate ran on the copy's alias while the live database stayed "default", so code that
    writes through Model.objects (a RunPython without .using(), a post_migrate handler) wrote into the live one."""
    members = _members(_backup(run_queued, admin_user))
    older = _with_database(  # a backup made before the backups app existed: its migration runs in the dry run
        members,
        "DROP TABLE backups_backup; DROP TABLE backups_backupschedule; DELETE FROM django_migrations "
        "WHERE app = 'backups';",
    )

    def careless(sender, **kwargs):
        if sender.label == "backups":
            Host.objects.get_or_create(name="made-by-a-migration", defaults={"address": "10.9.9.9"})

    post_migrate.connect(careless)
    try:
        result = services.dry_run(older)
    finally:
        post_migrate.disconnect(careless)
    assert result["migrations"][0] == "backups.0001_initial"  # and the backups app's later ones, nothing else
    assert all(name.startswith("backups.") for name in result["migrations"])
    assert not Host.objects.filter(name="made-by-a-migration").exists()  # the live database: untouched
    assert _section(result, "Hosts")["added"] == ["made-by-a-migration"]  # the copy: shown


@pytest.mark.django_db(transaction=True)
def test_a_row_named_outside_its_folder_deletes_nothing(data_dir, admin_user):
    identity = vault.ensure_identity()
    old = timezone.now() - timezone.timedelta(days=3)
    for origin in (Origin.MANUAL, Origin.UPLOADED):
        row = Backup.objects.create(name="../vault/identity.age", origin=origin)
        Backup.objects.filter(pk=row.pk).update(created_at=old)
        with pytest.raises(ValidationError) as caught:
            services.backup_restore_start(backup=row, user=admin_user, passphrase=PASS, dry_run=True)
        assert "not a name Tarn gives" in caught.value.message_dict["backup"][0]
        row.delete()
    Backup.objects.create(name="../vault/identity.age", origin=Origin.MANUAL)
    Backup.objects.filter(name="../vault/identity.age").update(created_at=old)
    assert services.retention(keep=0) == ["../vault/identity.age"]
    Backup.objects.create(name="../vault/identity.age", origin=Origin.UPLOADED)
    Backup.objects.filter(name="../vault/identity.age").update(created_at=old)
    assert services.uploads_prune() == 1
    assert identity.exists() and not Backup.objects.exists()
    # A link the web's user puts in uploads/ under an upload's name: the prune removes the link, not its target.
    name = files.new_name("uploaded")
    os.symlink(identity, files.uploads() / name)
    row = Backup.objects.create(name=name, origin=Origin.UPLOADED)
    with pytest.raises(ValidationError) as caught:  # and nothing reads through it
        files.read(row)
    assert "not a plain file" in caught.value.message_dict["backup"][0]
    Backup.objects.filter(pk=row.pk).update(created_at=old)
    assert services.uploads_prune() == 1
    assert identity.exists() and not os.path.lexists(files.uploads() / name)


@pytest.mark.django_db
def test_a_passphrase_with_a_line_break_is_refused_everywhere(data_dir, admin_client):
    for value, said in [
        ("correct horse\nbattery staple", "one line"),
        ("correct horse battery\r", "one line"),
        ("correct horse\x00battery", "NUL"),
    ]:
        with pytest.raises(ValidationError) as caught:
            services.backup_start(user=None, passphrase=value, passphrase_confirm=value)
        assert said in caught.value.message_dict["passphrase"][0]
        with pytest.raises(ValidationError) as caught:
            services.schedule_save(enabled=True, every="day", hour=1, passphrase=value, passphrase_confirm=value)
        assert said in caught.value.message_dict["passphrase"][0]
        response = admin_client.post(
            "/api/v1/config-backups/now/",
            {"passphrase": value, "passphrase_confirm": value},
            content_type="application/json",
        )
        assert response.status_code == 400 and "passphrase" in response.json()  # DRF has its own words for NUL
    assert not Operation.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_key_exports_are_left_out_of_a_backup(data_dir, run_queued, admin_user):
    host = Host.objects.get_or_create(name="local", defaults={"transport": "local", "address": "localhost"})[0]
    KeyExport.objects.create(host=host, user=admin_user, roots=["tank/secret"], data=b"age-encryption.org/v1 ...")
    members = _members(_backup(run_queued, admin_user))
    result = services.dry_run(members)
    exports = next(c for c in result["counts"] if c["model"].startswith("Key exports"))
    assert exports == {"model": exports["model"], "now": 1, "backup": 0}
    assert io.BytesIO(members[archive.DATABASE]).read().find(b"tank/secret") == -1
