"""Mount folders are not trusted by path: a link planted as a locked root's mount folder, or as a folder on its way,
fails the seal as an error (the lock says what it did and what it could not), makes an unlock refuse before any key
loads, and leaves a new dataset unmounted; nothing is mounted through it. On a FakeHost (its `links` are refused as
the helper refuses them); the lab shows the same on real OpenZFS (tests/lab/test_encryption.py)."""

import pytest

from encryption import services
from encryption.services import create, keys, lock, roots, unlock
from pools.models import Dataset
from shares.models import NfsExport
from tests.support.runners import FakeHost

CANARY = "canary-0be5 horse staple battery"
GET = ("zfs", "get", "-H", "-p", "-o", "property,value", "all", "--")
LIST = ("zfs", "list", "-H", "-r", "-t", "filesystem", "-o", "name,mountpoint,canmount", "--")


@pytest.fixture
def fake(monkeypatch):
    for module in (create, unlock, lock, keys, roots):
        monkeypatch.setattr(module, "inventory_refresh", lambda **_: None)
    return FakeHost().install(monkeypatch)


def _mounts(fake) -> list[list[str]]:
    return [a for a in fake.argvs if a[:2] in (["zfs", "mount"], ["zfs", "load-key"])]


def test_a_lock_whose_mount_folder_is_a_link_fails_saying_it_locked(host, admin_user, fake, run_queued):
    Dataset.objects.filter(host=host, name="tank/keyed").update(mountpoint="/tank/keyed")
    fake.answer(*GET, "tank/keyed", stdout="mountpoint\t/tank/keyed\ncanmount\ton\n")
    fake.links.add("/tank/keyed")
    op = run_queued(services.lock_start, host=host, user=admin_user, root="tank/keyed")
    assert op.status == "failed", op.message
    assert op.message.startswith("Locked tank/keyed (its key is unloaded") and "could not be sealed" in op.message
    assert "/tank/keyed is a symlink" in op.message and "does not mount through a link" in op.message
    assert ["mount_folder", "seal", "/tank/keyed"] in fake.argvs and not [a for a in fake.argvs if a[0] == "chattr"]


def test_a_lock_seals_its_folder_through_the_helper(host, admin_user, fake, run_queued):
    Dataset.objects.filter(host=host, name="tank/keyed").update(mountpoint="/tank/keyed")
    fake.answer(*GET, "tank/keyed", stdout="mountpoint\t/tank/keyed\ncanmount\ton\n")
    op = run_queued(services.lock_start, host=host, user=admin_user, root="tank/keyed")
    assert op.status == "succeeded", op.message
    assert "/tank/keyed: made immutable while unmounted" in op.log
    assert fake.mutations[-1] == ["mount_folder", "seal", "/tank/keyed"]


@pytest.mark.parametrize(
    ("listing", "planted"),
    [
        ("tank/vault\t/tank/vault\ton\ntank/vault/docs\t/tank/vault/docs\ton\n", "/tank/vault"),
        ("tank/vault\t/tank/home/vault\ton\n", "/tank/home"),  # a folder on the way (mountpoint set by hand)
        ("tank/vault\t/tank/vault\toff\ntank/vault/docs\t/tank/vault/docs\ton\n", "/tank/vault/docs"),
    ],
)
def test_an_unlock_refuses_a_link_on_the_way_to_a_mount_folder_before_any_key_loads(
    host, admin_user, fake, run_queued, listing, planted
):
    fake.answer(*LIST, "tank/vault", stdout=listing)
    fake.links.add(planted)
    op = run_queued(services.unlock_start, host=host, user=admin_user, roots=["tank/vault"], secret=CANARY)
    assert op.status == "failed" and "nothing was unlocked" in op.message, op.message
    assert f"{planted} is a symlink" in op.message and not _mounts(fake)


def test_an_unlock_mounts_once_the_folders_are_plain(host, admin_user, fake, run_queued):
    fake.answer(*LIST, "tank/vault", stdout="tank/vault\t/tank/vault\ton\ntank/vault/docs\t/tank/vault/docs\ton\n")
    op = run_queued(services.unlock_start, host=host, user=admin_user, roots=["tank/vault"], secret=CANARY)
    assert op.status == "succeeded", op.message
    checked = [a for a in fake.argvs if a[0] == "mount_folder"]
    assert checked == [["mount_folder", "check", "/tank/vault"]]  # docs' folder is inside the root's own filesystem
    assert _mounts(fake) == [
        ["zfs", "load-key", "-L", "prompt", "--", "tank/vault"],
        ["zfs", "mount", "--", "tank/vault"],  # explicitly: a replica (canmount=noauto) is mounted when unlocked
        ["zfs", "mount", "-R", "--", "tank/vault"],
    ]


def test_a_new_dataset_whose_folder_is_a_link_is_left_unmounted(host, admin_user, fake, run_queued):
    fake.answer(*GET, "tank/new", stdout="mountpoint\t/tank/new\ncanmount\ton\n")
    fake.links.add("/tank/new")
    op = run_queued(
        services.encrypted_create_start,
        host=host,
        user=admin_user,
        name="tank/new",
        passphrase=CANARY,
        passphrase_confirm=CANARY,
    )
    assert op.status == "failed" and op.message.startswith("Created tank/new, but"), op.message
    assert "tank/new is left unmounted" in op.message
    after = fake.argvs[fake.argvs.index(["zfs", "unmount", "--", "tank/new"]) :]
    assert not [a for a in after if a[:2] == ["zfs", "mount"]]  # a mount would follow the link


@pytest.mark.parametrize("lets_go", [True, False])
def test_a_lock_asks_again_while_nfsd_still_holds_a_filesystem_it_no_longer_exports(
    host, admin_user, fake, run_queued, monkeypatch, lets_go
):
    """nfsd lets go of a filesystem a moment after its export is dropped (later on a loaded NAS: issue 39's red lab
    run): a busy unmount right after the exports stopped is asked again each second for NFS_LET_GO seconds; one
    that stays busy is refused as before, its exports put back."""
    monkeypatch.setattr(lock, "NFS_LET_GO", 3)
    Dataset.objects.filter(host=host, name="tank/keyed").update(mountpoint="/tank/keyed")
    NfsExport.objects.create(host=host, dataset="tank/keyed", path="/tank/keyed", clients="*")
    fake.answer(*GET, "tank/keyed", stdout="mountpoint\t/tank/keyed\ncanmount\ton\n")
    unmount = ("zfs", "unmount", "-u", "--", "tank/keyed")
    fake.answer(*unmount, returncode=1, stderr="cannot unmount '/tank/keyed': pool or dataset is busy\n")
    seen = []
    if lets_go:  # the second try finds it free (a watcher runs before its call is answered)
        fake.on(*unmount, call=lambda argv: seen.append(argv) or (len(seen) == 2 and fake.answer(*unmount)))
    op = run_queued(services.lock_start, host=host, user=admin_user, root="tank/keyed")
    tries = [a for a in fake.argvs if tuple(a) == unmount]
    if lets_go:
        assert op.status == "succeeded" and len(tries) == 2, (op.message, tries)
    else:
        assert op.status == "failed" and "is busy" in op.message and "nothing was locked" in op.message
        assert 3 <= len(tries) <= 5, tries
