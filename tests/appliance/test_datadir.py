"""Issue 39, finding 8: the data dir's layout (appliance.datadir). An older install's files move once into the new
layout; a key folder or key file that is not root's alone is refused before a key in it is used."""

import os
import sqlite3
import stat
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from appliance import datadir, vault
from appliance.connect import ssh_identity
from tests.conftest import require


def _mode(path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


@pytest.fixture
def data(settings, tmp_path):
    settings.DATA_DIR = tmp_path / "var"
    settings.DATA_DIR.mkdir()
    return settings.DATA_DIR


def _older_install(data):
    """The layout before issue 39: everything in a data dir the web's group could write (2770)."""
    db = sqlite3.connect(data / "tarn.sqlite3")
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("CREATE TABLE t (v)")
    db.execute("INSERT INTO t VALUES ('kept')")
    db.commit()  # left in the -wal: the move checkpoints it first
    (data / "secret_key").write_text("k" * 64)
    (data / "backups").mkdir(mode=0o770)
    (data / "backups" / "uploaded-20250101-000000-abcdef.tarnbackup").write_bytes(b"TARN-BACKUP 1\n")
    (data / "backups" / "tarn-20250101-000000-abcdef.tarnbackup").write_bytes(b"TARN-BACKUP 1\n")
    vault.ensure_identity()
    os.chmod(data / "vault", 0o770)
    os.chmod(data, 0o2770)
    return db


def test_the_layout_moves_an_older_install_once_and_then_changes_nothing(data):
    db = _older_install(data)
    out = StringIO()
    call_command("tarn_layout", stdout=out)
    db.close()
    assert "moved the database into db/" in out.getvalue()
    assert not (data / "tarn.sqlite3").exists() and not (data / "tarn.sqlite3-wal").exists()
    moved = sqlite3.connect(data / "db" / "tarn.sqlite3")
    assert moved.execute("SELECT v FROM t").fetchall() == [("kept",)]
    moved.close()
    assert (data / "uploads" / "uploaded-20250101-000000-abcdef.tarnbackup").exists()
    assert not (data / "backups" / "uploaded-20250101-000000-abcdef.tarnbackup").exists()
    assert _mode(data) == 0o2750 and _mode(data / "db") == 0o2770 and _mode(data / "uploads") == 0o2770
    assert _mode(data / "vault") == 0o710 and _mode(data / "vault" / "identity.age") == 0o600
    assert _mode(data / "vault" / "recipient.txt") == 0o640 and _mode(data / "backups") == 0o2750
    assert _mode(data / "secret_key") == 0o640
    assert _mode(data / "backups" / "tarn-20250101-000000-abcdef.tarnbackup") == 0o640
    again = StringIO()
    call_command("tarn_layout", stdout=again)
    assert again.getvalue() == ""  # idempotent: nothing left to do
    assert vault.seal("a key")  # the checks pass on the layout it made


def test_two_databases_are_a_question_for_the_admin_not_a_guess(data):
    _older_install(data).close()
    (data / "db").mkdir()
    sqlite3.connect(data / "db" / "tarn.sqlite3").close()
    with pytest.raises(CommandError, match="two databases"):
        call_command("tarn_layout", stdout=StringIO())
    assert (data / "tarn.sqlite3").exists()


def test_a_key_folder_others_may_write_or_a_link_or_a_data_dir_others_may_write_is_refused(data, tmp_path):
    vault.ensure_identity()
    ssh_identity()
    os.chmod(data, 0o2770)  # the old data dir: the web's group could rename vault/ and ssh/
    with pytest.raises(vault.VaultError, match="writable by others"):
        vault.seal("a key")
    with pytest.raises(datadir.LayoutError, match="writable by others"):
        ssh_identity()
    os.chmod(data, 0o2750)
    os.chmod(data / "vault", 0o770)
    with pytest.raises(vault.VaultError, match="vault is writable by others"):
        vault.seal("a key")
    os.chmod(data / "vault", 0o700)
    os.chmod(data / "ssh" / "id_ed25519", 0o640)
    with pytest.raises(datadir.LayoutError, match="readable by others"):
        ssh_identity()
    os.chmod(data / "ssh" / "id_ed25519", 0o600)
    # A folder swapped for a link to one the web's user made.
    planted = tmp_path / "planted"
    (data / "vault").rename(planted)
    (data / "vault").symlink_to(planted)
    with pytest.raises(vault.VaultError, match="a link"):
        vault.seal("a key")


def test_a_key_folder_another_user_owns_is_refused_and_not_adopted(data):
    require(os.geteuid() == 0, "only root can give a folder to another user")
    vault.ensure_identity()
    os.chown(data / "vault", 4242, 4242)
    with pytest.raises(vault.VaultError, match="owned by uid 4242"):
        vault.seal("a key")
    with pytest.raises(CommandError, match="owned by uid 4242"):
        call_command("tarn_layout", stdout=StringIO())
    assert os.lstat(data / "vault").st_uid == 4242  # left as it was, for the admin to look at
