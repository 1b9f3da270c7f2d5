"""A backup pushed to a NAS, on a FakeHost (nothing runs; the NAS's side is the lab's): the runner makes the root-only
folder, writes the sealed file there 0600 (the same bytes as the local copy), removes the NAS's oldest beyond keep
(only names Tarn gives), and a NAS that refuses leaves the local backup standing with the failure on its row."""

import pytest

from appliance.models import Host
from backups import services
from backups.choices import NAS_FOLDER
from backups.models import Backup
from tests.support.runners import FakeHost

PASS = "canary-7f3e correct horse battery"
OLD = [f"tarn-2026010{d}-030000-abcdef.tarnbackup" for d in range(1, 4)]
FIND = ("find", "-P", NAS_FOLDER, "-mindepth", "1", "-maxdepth", "1", "-type", "f", "-printf", "%f\\n")


@pytest.fixture
def nas(data_dir, transactional_db, monkeypatch):
    host = Host.objects.create(name="nas2", address="10.0.0.6", facts={"zfs_version": "zfs-2.3.2"})
    services.schedule_save(
        enabled=False, every="day", hour=1, keep=2, push_host=host, passphrase=PASS, passphrase_confirm=PASS
    )
    return FakeHost().install(monkeypatch)


def _made(run_queued, user):
    return run_queued(services.backup_start, user=user, passphrase=PASS, passphrase_confirm=PASS)


@pytest.mark.django_db(transaction=True)
def test_a_backup_is_written_to_the_nas_and_its_oldest_beyond_keep_removed(nas, run_queued, admin_user):
    listed = sorted([*OLD, "notes.txt", "tarn-20260104-030000-abcdef.tarnbackup.part"])
    nas.answer(*FIND, stdout="".join(n + "\n" for n in listed))
    write = nas.write

    def written(path, text, mode, read_only):  # once written, the NAS lists the new one too
        nas.answer(*FIND, stdout="".join(n + "\n" for n in sorted([*listed, path.rsplit("/", 1)[1]])))
        return write(path, text, mode, read_only)

    nas.write = written
    op = _made(run_queued, admin_user)
    assert op.status == "succeeded", op.message
    backup = Backup.objects.get()
    assert op.message.endswith("; a copy on nas2."), op.message
    assert nas.mutations == [
        ["install", "-d", "-m", "0700", "--", NAS_FOLDER],
        ["write_file", f"{NAS_FOLDER}/{backup.name}", "600"],
        ["remove_file", f"{NAS_FOLDER}/{OLD[0]}"],  # keep 2: the two newest stay, the other files are not Tarn's
        ["remove_file", f"{NAS_FOLDER}/{OLD[1]}"],
    ]
    assert nas.writes == [(f"{NAS_FOLDER}/{backup.name}", services.path_of(backup).read_bytes())]
    assert nas.opened == [("nas2", False)]
    assert backup.pushed_to.name == "nas2" and backup.push_error == ""


@pytest.mark.django_db(transaction=True)
def test_a_nas_that_refuses_the_push_leaves_the_local_backup_and_says_so(nas, run_queued, admin_user):
    nas.answer(
        "install", returncode=1, stderr="install: cannot create directory '/var/lib/tarn': Read-only file system\n"
    )
    op = _made(run_queued, admin_user)
    assert op.status == "failed"
    backup = Backup.objects.get()
    assert f"Backup {backup.name} was made here, but pushing it to nas2 failed" in op.message, op.message
    assert "Read-only file system" in backup.push_error and backup.pushed_to is None
    assert services.path_of(backup).exists()
    assert not [a for a in nas.mutations if a[0] in ("write_file", "remove_file")]
