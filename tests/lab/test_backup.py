"""Issue 27, against the lab guest: configuration backups pushed to a NAS over SSH (root-only files, keep N there
too), and a backup restored on a fresh machine (an empty data dir, `manage.py tarn_restore`) that reaches the NAS
with the restored SSH key and its pinned host key — and refuses it once that pinned key is not the NAS's."""

import os
import subprocess
import sys

import pytest

from appliance.connect import ssh_dir
from appliance.models import Host
from backups import services
from backups.choices import NAS_FOLDER
from backups.models import Backup
from hostlib.keys import ensure_identity

pytestmark = [pytest.mark.lab, pytest.mark.django_db(transaction=True)]
PASS = "lab backup passphrase 27"


def _manage(data_dir, *args: str, passphrase_file=None, timeout: float = 180) -> subprocess.CompletedProcess:
    """manage.py on a fresh machine: its own data dir (database, secret key, vault, SSH key), nothing shared."""
    env = {**os.environ, "TARN_DATA_DIR": str(data_dir), "DJANGO_SETTINGS_MODULE": "tarn.settings"}
    env.pop("DJANGO_SECRET_KEY", None)
    if passphrase_file:
        env["TARN_BACKUP_PASSPHRASE_FILE"] = str(passphrase_file)
    return subprocess.run(
        [sys.executable, "manage.py", *args], env=env, capture_output=True, text=True, timeout=timeout, check=False
    )


FACTS = (
    "from appliance.models import Host; from appliance.services import host_refresh_facts; "
    "h = Host.objects.get(name='nas'); {change}host_refresh_facts(host=h); "
    "print('zfs=' + str(h.facts.get('zfs_version')), '|', h.facts_error)"
)


def test_backups_go_to_the_nas_and_a_fresh_machine_restored_from_one_reaches_it_with_its_pinned_key(
    guest, admin_user, run_queued, settings, tmp_path
):
    settings.DATA_DIR = tmp_path / "old"
    settings.DATA_DIR.mkdir()
    public = (ensure_identity(ssh_dir()).with_suffix(".pub")).read_text().strip()
    guest.sh(f"echo '{public}' >> /root/.ssh/authorized_keys")  # Tarn's own key, as a NAS added by Tarn has it
    nas = Host.objects.create(
        name="nas",
        transport="ssh",
        address=guest.env["LAB_SSH_HOST"],
        port=guest.ssh_port,
        host_keys=guest.env["LAB_HOST_KEY"],  # identity_file empty: Tarn's own key
    )
    services.schedule_save(
        enabled=False, every="day", hour=1, keep=2, push_host=nas, passphrase=PASS, passphrase_confirm=PASS
    )
    for _ in range(3):
        op = run_queued(services.backup_start, user=admin_user, passphrase=PASS, passphrase_confirm=PASS)
        assert op.status == "succeeded", op.message
        assert f"a copy on {nas.name}" in op.message
    kept = [b.name for b in Backup.objects.order_by("created_at")]
    assert len(kept) == 2
    listed = guest.sh(f"stat -c '%a %U %n' {NAS_FOLDER}/* && stat -c '%a' {NAS_FOLDER}").split("\n")
    assert sorted(line.split()[2].rsplit("/", 1)[1] for line in listed[:2]) == kept, listed  # keep 2 there too
    assert all(line.startswith("600 root ") for line in listed[:2]) and listed[2] == "700", listed
    pushed = guest.sh(f"sha256sum {NAS_FOLDER}/{kept[-1]}").split()[0]
    assert pushed == Backup.objects.get(name=kept[-1]).sha256  # the same bytes

    # A fresh machine: nothing of the old one but the backup file and the passphrase.
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    secret = tmp_path / "passphrase"
    secret.write_text(PASS)
    wrong = tmp_path / "wrong"
    wrong.write_text("not the passphrase at all")
    refused = _manage(
        fresh,
        "tarn_restore",
        str(services.path_of(Backup.objects.get(name=kept[-1]))),
        "--yes",
        passphrase_file=wrong,
    )
    assert refused.returncode != 0 and "Wrong passphrase" in refused.stderr, refused.stdout + refused.stderr
    backup_file = str(settings.DATA_DIR / "backups" / kept[-1])
    refused = _manage(fresh, "tarn_restore", backup_file, "--yes", passphrase_file=secret)
    assert refused.returncode != 0 and "made elsewhere" in refused.stderr, refused.stdout + refused.stderr
    restored = _manage(fresh, "tarn_restore", backup_file, "--yes", "--made-elsewhere", passphrase_file=secret)
    assert restored.returncode == 0, restored.stdout + restored.stderr
    assert "Made elsewhere" in restored.stdout  # a fresh machine made none of the backups it is handed
    assert "Hosts (appliance): +" in restored.stdout and "Restored" in restored.stdout, restored.stdout
    assert (fresh / "ssh" / "id_ed25519").read_bytes() == (settings.DATA_DIR / "ssh" / "id_ed25519").read_bytes()
    assert oct((fresh / "ssh" / "id_ed25519").stat().st_mode & 0o777) == "0o600"

    reached = _manage(fresh, "shell", "-c", FACTS.format(change=""))
    assert "zfs=2." in reached.stdout and reached.stdout.strip().endswith("|"), reached.stdout + reached.stderr
    # The pinned key is honoured: pinned to another key, the same NAS is refused.
    other = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHJ5ZGVyIHdhcyBoZXJlIGFuZCBpdCBpcyBub3QgbGFi"
    change = f"h.host_keys = '{other}'; h.save(); "
    refused = _manage(fresh, "shell", "-c", FACTS.format(change=change))
    assert "different host key than the one pinned" in refused.stdout, refused.stdout + refused.stderr
