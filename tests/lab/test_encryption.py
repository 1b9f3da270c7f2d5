"""Native encryption's status, read from the lab's real OpenZFS: an encrypted dataset and its child (one encryption
root), what the inventory keeps of them, locked once the key is unloaded, and the kernel's AES and GCM
implementations in the host's facts (issue 26, its first part: status everywhere)."""

import json
import re
import subprocess
import time
from io import StringIO

import pyrage
import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command

from appliance.services import host_refresh_facts
from encryption import services
from encryption.models import KeyEscrow, KeyExport, RetiredKey
from hostlib.zpool import PoolLayout, VdevSpec
from pools import services as pool_services
from pools.models import Dataset, ImportablePool
from pools.services import inventory_refresh
from shares import selectors as share_selectors
from shares import services as share_services
from tests.conftest import require_tool
from tests.lab.conftest import smbclient
from tests.lab.test_share_guard import ALICE, EXPORT, SHARE

pytestmark = [pytest.mark.lab, pytest.mark.lane(1)]
DISK = "/dev/disk/by-id/virtio-zfsdisk1"


def test_an_encrypted_dataset_shows_its_root_key_and_lock_on_the_pages_and_the_api(guest, lab_host, admin_client):
    guest.sh(
        f"zpool create -f tank {DISK} && printf 'correct horse battery staple' > /root/tank.key && chmod 600 /root/tank.key"
        " && zfs create -o encryption=on -o keyformat=passphrase -o keylocation=file:///root/tank.key tank/secret"
        " && zfs create tank/secret/child && zfs create tank/plain"
    )
    inventory_refresh(host=lab_host)
    rows = {d.name: d for d in Dataset.objects.filter(host=lab_host)}
    assert rows["tank/secret"].encryption == {
        "cipher": "aes-256-gcm",
        "root": "tank/secret",
        "key": "available",
        "format": "passphrase",
        "location": "file:///root/tank.key",
    }
    assert rows["tank/secret/child"].encryption["root"] == "tank/secret"
    assert rows["tank/plain"].encryption == {} and not rows["tank"].encryption

    guest.sh("zfs unmount tank/secret && zfs unload-key -r tank/secret")
    inventory_refresh(host=lab_host)
    secret = Dataset.objects.get(host=lab_host, name="tank/secret")
    assert secret.locked and Dataset.objects.get(host=lab_host, name="tank/secret/child").locked
    session = admin_client.session
    session["host_id"] = lab_host.pk
    session.save()
    page = admin_client.get(f"/pools/datasets/{secret.pk}/").content.decode()
    assert 'data-key="unavailable"' in page and "aes-256-gcm" in page and "file:///root/tank.key" in page
    assert page.count('data-key="unavailable"') == 1
    pool = admin_client.get(f"/pools/{secret.pool_id}/").content.decode()
    assert pool.count('data-key="unavailable"') == 2  # the root and its child
    api = admin_client.get(f"/api/v1/datasets/{secret.pk}/").json()
    assert api["encryption"]["key"] == "unavailable" and api["encryption"]["root"] == "tank/secret"
    assert admin_client.get(f"/api/v1/datasets/{rows['tank/plain'].pk}/").json()["encryption"] is None

    host_refresh_facts(host=lab_host)
    lab_host.refresh_from_db()
    assert lab_host.facts["aes_impl"] in ("aesni", "x86_64", "generic")
    assert lab_host.facts["gcm_impl"] in ("avx", "pclmulqdq", "generic")


CANARY = "canary-7f3e horse battery staple"  # must never be seen anywhere but the guest's zfs
NEW = "canary-new 9d1c4 second passphrase"
ROUNDS = 100_000  # ZFS's least: a passphrase takes ~2.5 s to load under emulation, not ~8 s with its default 350,000
EXPORT_PASSPHRASE = "canary-export a7e2 third passphrase"


def _zget(guest, props: str, name: str) -> list[str]:
    return guest.sh(f"zfs get -H -o value {props} {name}").split()


def test_tarn_makes_locks_and_unlocks_encrypted_datasets_and_keeps_no_secret(
    guest, lab_host, admin_user, run_queued, caplog
):
    guest.sh(f"zpool create -f tank {DISK}")
    inventory_refresh(host=lab_host)
    with pytest.raises(ValidationError) as short:
        services.encrypted_create_start(
            host=lab_host, user=admin_user, name="tank/x", passphrase="short", passphrase_confirm="short"
        )
    assert "passphrase" in short.value.message_dict

    op = run_queued(
        services.encrypted_create_start,
        host=lab_host,
        user=admin_user,
        name="tank/vault",
        passphrase=CANARY,
        passphrase_confirm=CANARY,
        pbkdf2iters=ROUNDS,
    )
    assert op.status == "succeeded", op.message
    assert _zget(guest, "encryption,keyformat,keylocation,keystatus,pbkdf2iters", "tank/vault") == [
        "aes-256-gcm",
        "passphrase",
        "prompt",
        "available",
        "100000",
    ]
    # The key folder planted as a link (to a folder a share could reach): refused, nothing made, no key left
    guest.sh("mkdir -p /etc/tarn && ln -s /tmp /etc/tarn/keys")
    op = run_queued(
        services.encrypted_create_start, host=lab_host, user=admin_user, name="tank/keyed", keyformat="hex", escrow=True
    )
    assert op.status == "failed" and "link" in op.message, op.message
    assert "tank/keyed" not in guest.sh("zfs list -H -o name") and not KeyEscrow.objects.exists()
    assert guest.sh("ls /tmp | grep -c key || true").strip() == "0"
    guest.sh("rm /etc/tarn/keys")
    op = run_queued(
        services.encrypted_create_start, host=lab_host, user=admin_user, name="tank/keyed", keyformat="hex", escrow=True
    )
    assert op.status == "succeeded", op.message
    op = run_queued(  # a zvol too
        services.encrypted_create_start,
        host=lab_host,
        user=admin_user,
        name="tank/vol",
        volume_size="64M",
        passphrase=CANARY,
        passphrase_confirm=CANARY,
        pbkdf2iters=ROUNDS,
    )
    assert op.status == "succeeded", op.message
    assert _zget(guest, "type,encryption,keystatus", "tank/vol") == ["volume", "aes-256-gcm", "available"]
    keyformat, location = _zget(guest, "keyformat,keylocation", "tank/keyed")
    assert keyformat == "hex" and re.fullmatch(r"file:///etc/tarn/keys/tank%keyed\.[0-9a-f]{8}\.key", location)
    keyfile = location.removeprefix("file://")
    assert guest.sh(f"stat -c %a:%U /etc/tarn/keys {keyfile}").split() == ["700:root", "400:root"]
    hex_key = guest.sh(f"cat {keyfile}").strip()
    assert len(hex_key) == 64 and KeyEscrow.objects.get(host=lab_host, dataset="tank/keyed").sealed.find(hex_key) == -1
    guest.sh("zfs create tank/vault/docs && echo kept > /tank/vault/docs/a.txt")
    inventory_refresh(host=lab_host)

    # Lock: unmounted, key unloaded, the child too
    op = run_queued(services.lock_start, host=lab_host, user=admin_user, root="tank/vault")
    assert op.status == "succeeded", op.message
    assert _zget(guest, "keystatus,mounted", "tank/vault/docs") == ["unavailable", "no"]
    assert guest.sh("ls -A /tank/vault 2>/dev/null | wc -l").strip() == "0"
    stray = guest.sh("touch /tank/vault/stray 2>&1; echo rc=$?")  # the empty folder is immutable, even for root
    assert "Operation not permitted" in stray and "rc=1" in stray, stray

    # A wrong passphrase: nothing loads, the error names the dataset; a dry run with the right one loads nothing
    op = run_queued(
        services.unlock_start, host=lab_host, user=admin_user, roots=["tank/vault"], secret="wrong passphrase!"
    )
    assert op.status == "failed" and "tank/vault" in op.message and "nothing was unlocked" in op.message
    op = run_queued(
        services.unlock_start, host=lab_host, user=admin_user, roots=["tank/vault"], secret=CANARY, dry_run=True
    )
    assert op.status == "succeeded" and "fits tank/vault" in op.message, op.message
    assert _zget(guest, "keystatus", "tank/vault") == ["unavailable"]

    # Both at once: the passphrase for one, the escrowed key for the other (its key file gone from the NAS)
    run_queued(services.lock_start, host=lab_host, user=admin_user, root="tank/keyed")
    guest.sh(f"rm {keyfile}")
    op = run_queued(  # keyed's escrowed key fits and loads first; vault's does not: keyed is unloaded again
        services.unlock_start, host=lab_host, user=admin_user, roots=["tank/vault", "tank/keyed"], secret="wrong one!"
    )
    assert op.status == "failed" and "does not fit tank/vault" in op.message, op.message
    assert _zget(guest, "keystatus", "tank/keyed") == ["unavailable"]
    op = run_queued(
        services.unlock_start, host=lab_host, user=admin_user, roots=["tank/vault", "tank/keyed"], secret=CANARY
    )
    assert op.status == "succeeded", op.message
    assert guest.sh("cat /tank/vault/docs/a.txt").strip() == "kept"
    assert _zget(guest, "keystatus,mounted", "tank/keyed") == ["available", "yes"]

    # Change keys: the current one is checked first; a new passphrase; a new hex key in a new file (escrowed again)
    op = run_queued(
        services.change_key_start,
        host=lab_host,
        user=admin_user,
        root="tank/vault",
        confirm="tank/vault",
        current_secret="wrong passphrase!",
        new_passphrase=NEW,
        new_passphrase_confirm=NEW,
        pbkdf2iters=ROUNDS,
    )
    assert op.status == "failed" and "does not fit tank/vault: nothing was changed" in op.message, op.message
    op = run_queued(
        services.change_key_start,
        host=lab_host,
        user=admin_user,
        root="tank/vault",
        confirm="tank/vault",
        current_secret=CANARY,
        new_passphrase=NEW,
        new_passphrase_confirm=NEW,
        pbkdf2iters=ROUNDS,
    )
    assert op.status == "succeeded", op.message
    guest.sh(f"printf '%s\\n' '{NEW}' | zfs load-key -n -L prompt tank/vault")  # the new one fits
    op = run_queued(
        services.change_key_start,
        host=lab_host,
        user=admin_user,
        root="tank/keyed",
        confirm="tank/keyed",
        keyformat="hex",
        escrow=True,
    )
    assert op.status == "succeeded", op.message
    location = _zget(guest, "keylocation", "tank/keyed")[0]
    assert location.startswith("file:///etc/tarn/keys/tank%keyed.") and location != f"file://{keyfile}"
    new_key = guest.sh(f"cat {location.removeprefix('file://')}").strip()
    assert new_key != hex_key and len(new_key) == 64
    retired = RetiredKey.objects.get(host=lab_host, dataset="tank/keyed")  # the old key: kept, sealed
    assert retired.keyfile == keyfile and retired.sealed and KeyEscrow.objects.get(dataset="tank/keyed").sealed

    # Export every key (the host's name typed): one age file with keyed's key; vault's passphrase is not Tarn's
    op = run_queued(
        services.keys_export_start,
        host=lab_host,
        user=admin_user,
        roots=[],
        confirm=lab_host.name,
        export_passphrase=EXPORT_PASSPHRASE,
        export_passphrase_confirm=EXPORT_PASSPHRASE,
    )
    assert op.status == "succeeded", op.message
    export = KeyExport.objects.get(host=lab_host)
    assert export.roots == ["tank/keyed"] and export.left_out == [
        "tank/vault: a passphrase Tarn does not keep",
        "tank/vol: a passphrase Tarn does not keep",
    ]
    _, data = services.key_export_take(export=export)
    assert not KeyExport.objects.exists() and new_key.encode() not in data  # downloaded once, encrypted
    keys = services.keys_from_export(data=data, passphrase=EXPORT_PASSPHRASE)
    assert keys == {"tank/keyed": new_key}
    retired_keys = json.loads(pyrage.passphrase.decrypt(data, EXPORT_PASSPHRASE))["retired"]
    assert [k["key"] for k in retired_keys["tank/keyed"]] == [hex_key]  # the old one, for what was sent before
    # Unlock from the export alone: the key file and Tarn's copy gone
    run_queued(services.lock_start, host=lab_host, user=admin_user, root="tank/keyed")
    guest.sh(f"rm {location.removeprefix('file://')}")
    KeyEscrow.objects.all().delete()
    op = run_queued(services.unlock_start, host=lab_host, user=admin_user, roots=["tank/keyed"], keys=keys)
    assert op.status == "succeeded", op.message
    assert _zget(guest, "keystatus", "tank/keyed") == ["available"]

    # No secret anywhere Tarn writes: the database (operations, audit, escrow), the log
    out = StringIO()
    call_command("dumpdata", stdout=out)
    for secret in (CANARY, NEW, EXPORT_PASSPHRASE, hex_key, new_key):
        assert secret not in out.getvalue() and secret not in caplog.text


def test_after_a_reboot_a_locked_datasets_shares_take_no_file_and_unlock_brings_them_back(
    guest, shared, lab_host, admin_user, run_queued, tmp_path
):
    """The failure the issue names: the NAS reboots, the dataset's passphrase is not there, and the share above it
    must not take files into the parent's empty folder. Made, shared and unlocked through Tarn; a real reboot."""
    shared(
        services.encrypted_create_start,
        name="tank/vault",
        passphrase=CANARY,
        passphrase_confirm=CANARY,
        pbkdf2iters=ROUNDS,
    )
    guest.sh("chmod 0777 /tank/vault")
    inventory_refresh(host=lab_host)
    shared(share_services.smb_share_save_start, data={"name": "vault", "dataset": "tank/vault", **SHARE})
    shared(share_services.nfs_export_save_start, data={"dataset": "tank/vault", **EXPORT})
    kept = tmp_path / "kept.txt"
    kept.write_text("inside the encrypted dataset")
    put = smbclient(guest, "vault", *ALICE, command=f"put {kept} kept.txt")
    assert put.returncode == 0, put.stdout + put.stderr

    seconds = guest.reboot()
    assert guest.sh("zfs get -H -o value keystatus,mounted tank/vault").split() == ["unavailable", "no"]
    assert guest.sh("lsattr -d /tank/vault").split()[0].count("i") == 1  # the empty folder is immutable
    lost = tmp_path / "lost.txt"
    lost.write_text("must not land in the parent's folder")
    refused = smbclient(guest, "vault", *ALICE, command=f"put {lost} lost.txt")
    assert refused.returncode != 0 and "NT_STATUS_ACCESS_DENIED" in refused.stdout + refused.stderr, refused.stdout
    nfs_try = guest.sh(
        "mkdir -p /mnt/v && timeout 60 mount -t nfs -o vers=4.2,retry=0 127.0.0.1:/tank/vault /mnt/v 2>&1; echo rc=$?"
    )
    assert "rc=0" not in nfs_try, nfs_try
    assert guest.sh("find /tank/vault").split() == ["/tank/vault"]
    inventory_refresh(host=lab_host)
    assert share_selectors.share_overview(host=lab_host)["smb_shares"][0].off_reason == "dataset locked"

    op = run_queued(services.unlock_start, host=lab_host, user=admin_user, roots=["tank/vault"], secret=CANARY)
    assert op.status == "succeeded", op.message
    back = smbclient(guest, "vault", *ALICE, command=f"get kept.txt {tmp_path}/back.txt")
    assert back.returncode == 0 and (tmp_path / "back.txt").read_text() == kept.read_text(), back.stdout
    mounted = guest.sh("timeout 60 mount -t nfs -o vers=4.2,retry=0 127.0.0.1:/tank/vault /mnt/v 2>&1; echo rc=$?")
    assert (
        "rc=0" in mounted and guest.sh("cat /mnt/v/kept.txt; umount /mnt/v").strip() == "inside the encrypted dataset"
    )

    # A client with the share open: lock is refused, naming who; force closes the session and locks
    argv = [require_tool("smbclient"), "//127.0.0.1/vault", "-p", guest.env["LAB_SMB_PORT"], *ALICE]
    client = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        client.stdin.write("ls\n")
        client.stdin.flush()
        for _ in range(30):
            if "alice" in guest.sh("smbstatus -b 2>/dev/null || true"):
                break
            time.sleep(1)
        op = run_queued(services.lock_start, host=lab_host, user=admin_user, root="tank/vault")
        assert op.status == "failed" and "open SMB sessions" in op.message and "alice" in op.message, op.message
        assert guest.sh("zfs get -H -o value keystatus tank/vault").strip() == "available"
        op = run_queued(services.lock_start, host=lab_host, user=admin_user, root="tank/vault", force=True)
        assert op.status == "succeeded", op.message
        assert guest.sh("zfs get -H -o value keystatus,mounted tank/vault").split() == ["unavailable", "no"]
    finally:
        client.kill()
        client.wait(10)
    print(f"reboot took {seconds:.0f} s")


def test_an_encrypted_pool_made_by_tarn_imports_with_its_key_file_and_says_what_stays_locked(
    guest, lab_host, admin_user, run_queued
):
    inventory_refresh(host=lab_host)
    disk = "/dev/disk/by-id/virtio-zfsdisk2"
    layout = PoolLayout(data=(VdevSpec("stripe", (disk,)),))
    with pytest.raises(ValidationError) as differ:
        pool_services.pool_create_start(
            host=lab_host,
            user=admin_user,
            name="sealed",
            layout=layout,
            pool_props={},
            root_props={},
            encryption="passphrase",
            passphrase=CANARY,
            passphrase_confirm="other",
        )
    assert "passphrase_confirm" in differ.value.message_dict
    op = run_queued(
        pool_services.pool_create_start,
        host=lab_host,
        user=admin_user,
        name="sealed",
        layout=layout,
        pool_props={},
        root_props={},
        encryption="hex",
    )
    assert op.status == "succeeded", op.message
    cipher, keyformat, location, keystatus = _zget(guest, "encryption,keyformat,keylocation,keystatus", "sealed")
    assert (cipher, keyformat, keystatus) == ("aes-256-gcm", "hex", "available")
    assert re.fullmatch(r"file:///etc/tarn/keys/sealed\.[0-9a-f]{8}\.key", location), location
    op = run_queued(
        services.encrypted_create_start,
        host=lab_host,
        user=admin_user,
        name="sealed/private",
        passphrase=CANARY,
        passphrase_confirm=CANARY,
        pbkdf2iters=ROUNDS,
    )
    assert op.status == "succeeded", op.message
    guest.sh("zfs create sealed/plain-child && echo hi > /sealed/plain-child/f && zpool export sealed")
    assert guest.sh("lsattr -d /sealed").split()[0].count("i") == 1  # the pool's empty mount folder
    inventory_refresh(host=lab_host)
    run_queued(pool_services.pool_import_scan_start, host=lab_host, user=admin_user)
    guid = ImportablePool.objects.get(host=lab_host, name="sealed").guid
    op = run_queued(pool_services.pool_import_start, host=lab_host, user=admin_user, guid=guid)
    assert op.status == "succeeded" and op.message.endswith(
        "locked (their passphrase is needed: Encryption page): sealed/private"
    ), op.message
    assert guest.sh("cat /sealed/plain-child/f").strip() == "hi"  # the key file's root opened and mounted
    assert _zget(guest, "keystatus,mounted", "sealed/private") == ["unavailable", "no"]


def test_a_link_planted_on_the_way_to_a_locked_roots_mount_folder_fails_the_seal_and_nothing_lands_through_it(
    guest, lab_host, admin_user, run_queued
):
    """Issue 39, finding 10. A root's mountpoint set by hand below a plain folder of the pool's own filesystem (what
    a share of the pool exposes): a client swaps that folder for a link while the root is mounted (the mount moves
    along). Tarn's lock then cannot seal the folder (an error, saying it locked; chattr +i by path sealed the
    link's target instead), its unlock refuses before any key loads (zfs mount followed the link), and a link
    planted as the unsealed folder itself is refused the same way. Once the folders are plain it mounts and seals."""
    guest.sh(f"zpool create -f tank {DISK} && mkdir -p /tank/home /tmp/elsewhere/vault")
    inventory_refresh(host=lab_host)
    op = run_queued(
        services.encrypted_create_start,
        host=lab_host,
        user=admin_user,
        name="tank/vault",
        passphrase=CANARY,
        passphrase_confirm=CANARY,
        pbkdf2iters=ROUNDS,
    )
    assert op.status == "succeeded", op.message
    guest.sh("zfs set mountpoint=/tank/home/vault tank/vault && echo kept > /tank/home/vault/a.txt")
    inventory_refresh(host=lab_host)
    guest.sh("mv /tank/home /tank/home.old && ln -s /tmp/elsewhere /tank/home")  # the mount moves along

    op = run_queued(services.lock_start, host=lab_host, user=admin_user, root="tank/vault")
    assert op.status == "failed" and op.message.startswith("Locked tank/vault"), op.message
    assert "/tank/home is a symlink" in op.message and "could not be sealed" in op.message, op.message
    assert _zget(guest, "keystatus,mounted", "tank/vault") == ["unavailable", "no"]
    assert "i" not in guest.sh("lsattr -d /tmp/elsewhere/vault").split()[0]  # the link's target is untouched

    def refused_and_nothing_landed(planted: str) -> None:
        op = run_queued(services.unlock_start, host=lab_host, user=admin_user, roots=["tank/vault"], secret=CANARY)
        assert op.status == "failed" and "nothing was unlocked" in op.message, op.message
        assert f"{planted} is a symlink" in op.message, op.message
        assert _zget(guest, "keystatus,mounted", "tank/vault") == ["unavailable", "no"]
        assert guest.sh("findmnt -n -o TARGET -S tank/vault || true").strip() == ""
        assert guest.sh("ls -A /tmp/elsewhere/vault").strip() == ""

    refused_and_nothing_landed("/tank/home")
    # The folder on the way put back, the (unsealed) mount folder itself swapped for a link
    guest.sh("rm /tank/home && mv /tank/home.old /tank/home && rmdir /tank/home/vault")
    guest.sh("ln -s /tmp/elsewhere/vault /tank/home/vault")
    refused_and_nothing_landed("/tank/home/vault")
    # The SMB guard's own command (hostlib.samba.mounted_guard): a link to a mounted filesystem is not one
    guest.sh("ln -sfn /tank /tank/home/vault")
    guard = "mountpoint -q --nofollow /tank/home/vault; echo rc=$?; mountpoint -q /tank/home/vault; echo rc=$?"
    nofollow, follow = guest.sh(guard).split()
    assert nofollow != "rc=0" and follow == "rc=0"  # smbd refuses on any non-zero exit

    guest.sh("rm /tank/home/vault && mkdir /tank/home/vault")
    op = run_queued(services.unlock_start, host=lab_host, user=admin_user, roots=["tank/vault"], secret=CANARY)
    assert op.status == "succeeded", op.message
    assert guest.sh("cat /tank/home/vault/a.txt").strip() == "kept"
    inventory_refresh(host=lab_host)
    op = run_queued(services.lock_start, host=lab_host, user=admin_user, root="tank/vault")
    assert op.status == "succeeded", op.message
    assert "i" in guest.sh("lsattr -d /tank/home/vault").split()[0]  # sealed through its descriptor
    assert "rc=1" in guest.sh("rmdir /tank/home/vault 2>&1; echo rc=$?")  # so it cannot be swapped any more
