"""The encryption runners on a FakeHost, the exact commands asserted (nothing runs; the effects are the lab's,
tests/lab/test_encryption.py): an unlock of several roots is all or nothing, a lock unexports, unmounts and unloads
in that order (a busy one refused with its exports back), and a new encrypted dataset gets its key on stdin.
zfs's refusal of a key is the stderr OpenZFS 2.3 prints (as in test_keys.py); `exportfs -s` is the lab's capture
(fixtures/host/exportfs-s.txt) with the path moved under the root."""

import pytest
from django.utils import timezone

from encryption import services
from encryption.services import create, keys, lock, roots, unlock
from pools.models import Dataset
from shares.models import NfsExport
from tests.encryption.conftest import _enc
from tests.support.runners import FakeHost, captured

CANARY = "canary-0be5 horse staple battery"
GET = ("zfs", "get", "-H", "-p", "-o", "property,value", "all", "--")
LIST = ("zfs", "list", "-H", "-r", "-t", "filesystem", "-o", "name,mountpoint,canmount", "--")
REFUSED = "Key load error: Incorrect key provided for '{}'.\n"


@pytest.fixture
def fake(monkeypatch):
    for module in (create, unlock, lock, keys, roots):
        monkeypatch.setattr(module, "inventory_refresh", lambda **_: None)
    return FakeHost().install(monkeypatch)


@pytest.fixture
def two(host):
    """A second locked passphrase root beside tank/vault."""
    pool = host.pools.get(name="tank")
    props = _enc("tank/photos", "unavailable")
    Dataset.objects.create(
        host=host, pool=pool, name="tank/photos", type="filesystem", properties=props, observed_at=timezone.now()
    )
    return host


def _keys(fake) -> list[list[str]]:
    return [a for a in fake.argvs if a[:2] in (["zfs", "load-key"], ["zfs", "unload-key"], ["zfs", "mount"])]


def test_an_unlock_of_two_roots_loads_both_keys_then_mounts_both(two, admin_user, fake, run_queued):
    op = run_queued(
        services.unlock_start, host=two, user=admin_user, roots=["tank/vault", "tank/photos"], secret=CANARY
    )
    assert op.status == "succeeded", op.message
    assert _keys(fake) == [
        ["zfs", "load-key", "-L", "prompt", "--", "tank/photos"],
        ["zfs", "load-key", "-L", "prompt", "--", "tank/vault"],
        ["zfs", "mount", "--", "tank/photos"],
        ["zfs", "mount", "-R", "--", "tank/photos"],
        ["zfs", "mount", "--", "tank/vault"],
        ["zfs", "mount", "-R", "--", "tank/vault"],
    ]
    loads = [c for c in fake.calls if c.argv[:2] == ["zfs", "load-key"]]
    assert [c.text for c in loads] == [CANARY + "\n"] * 2  # on stdin, one line, never in argv
    assert not [a for a in fake.argvs if CANARY in " ".join(a)]


def test_one_root_refusing_its_key_leaves_nothing_unlocked_and_is_named(two, admin_user, fake, run_queued):
    fake.answer(
        *["zfs", "load-key", "-L", "prompt", "--", "tank/vault"], returncode=255, stderr=REFUSED.format("tank/vault")
    )
    op = run_queued(
        services.unlock_start, host=two, user=admin_user, roots=["tank/vault", "tank/photos"], secret=CANARY
    )
    assert op.status == "failed"
    assert op.message == "The key does not fit tank/vault: nothing was unlocked.", op.message
    assert _keys(fake) == [
        ["zfs", "load-key", "-L", "prompt", "--", "tank/photos"],
        ["zfs", "load-key", "-L", "prompt", "--", "tank/vault"],
        ["zfs", "unload-key", "--", "tank/photos"],  # the one that fitted is locked again; nothing mounted
    ]


def test_a_dry_run_checks_each_key_with_n_and_changes_nothing(two, admin_user, fake, run_queued):
    fake.answer(
        "zfs",
        "load-key",
        "-n",
        "-L",
        "prompt",
        "--",
        "tank/photos",
        returncode=255,
        stderr=REFUSED.format("tank/photos"),
    )
    op = run_queued(
        services.unlock_start,
        host=two,
        user=admin_user,
        roots=["tank/vault", "tank/photos"],
        secret=CANARY,
        dry_run=True,
    )
    assert op.status == "failed" and "does not fit tank/photos" in op.message, op.message
    assert _keys(fake) == [
        ["zfs", "load-key", "-n", "-L", "prompt", "--", "tank/photos"],
        ["zfs", "load-key", "-n", "-L", "prompt", "--", "tank/vault"],
    ]
    assert not [a for a in fake.argvs if a[0] == "mount_folder"]


def _exported(fake, host):
    Dataset.objects.filter(host=host, name="tank/keyed").update(mountpoint="/tank/keyed")
    NfsExport.objects.create(host=host, dataset="tank/keyed", path="/tank/keyed", clients="*")
    fake.answer(*GET, "tank/keyed", stdout="mountpoint\t/tank/keyed\ncanmount\ton\n")
    fake.answer("exportfs", "-s", stdout=captured("exportfs-s.txt").replace("/xt/v", "/tank/keyed"))


def test_a_lock_unexports_then_unmounts_and_unloads(host, admin_user, fake, run_queued):
    _exported(fake, host)
    op = run_queued(services.lock_start, host=host, user=admin_user, root="tank/keyed")
    assert op.status == "succeeded", op.message
    assert fake.mutations[:3] == [
        ["exportfs", "-u", "127.0.0.1:/tank/keyed"],
        ["exportfs", "-u", "10.0.0.0/24:/tank/keyed"],
        ["zfs", "unmount", "-u", "--", "tank/keyed"],  # -u: the key unloads with the unmount
    ]
    assert "NFS exports stopped: 127.0.0.1:/tank/keyed, 10.0.0.0/24:/tank/keyed" in op.log
    assert ["exportfs", "-ra"] not in fake.argvs


def test_a_busy_lock_is_refused_with_its_exports_put_back(host, admin_user, fake, run_queued, monkeypatch):
    monkeypatch.setattr(lock, "NFS_LET_GO", 0)
    _exported(fake, host)
    fake.answer("zfs", "unmount", returncode=1, stderr="cannot unmount '/tank/keyed': pool or dataset is busy\n")
    op = run_queued(services.lock_start, host=host, user=admin_user, root="tank/keyed")
    assert op.status == "failed" and "tank/keyed is busy" in op.message and "nothing was locked" in op.message
    assert fake.mutations == [
        ["exportfs", "-u", "127.0.0.1:/tank/keyed"],
        ["exportfs", "-u", "10.0.0.0/24:/tank/keyed"],
        ["zfs", "unmount", "-u", "--", "tank/keyed"],
        ["exportfs", "-ra"],  # nothing was locked: the exports come back
    ]


def test_a_new_passphrase_dataset_is_created_with_its_key_on_stdin(host, admin_user, fake, run_queued):
    fake.answer(*GET, "tank/new", stdout="mountpoint\t/tank/new\ncanmount\ton\n")
    typed = {"passphrase": CANARY, "passphrase_confirm": CANARY}
    op = run_queued(services.encrypted_create_start, host=host, user=admin_user, name="tank/new", **typed)
    assert op.status == "succeeded", op.message
    made = next(c for c in fake.calls if c.argv[:2] == ["zfs", "create"])
    assert made.argv[-2:] == ["--", "tank/new"] and made.mutating
    options = " ".join(made.argv)
    assert "-o encryption=aes-256-gcm" in options and "-o keyformat=passphrase -o keylocation=prompt" in options
    assert CANARY not in options and made.text == CANARY + "\n"
    assert "pbkdf2iters" not in options, "ZFS's own default unless asked"


def test_a_passphrases_rounds_go_to_zfs_when_asked_on_create_and_on_a_change_of_key(host, admin_user, fake, run_queued):
    fake.answer(*GET, "tank/new", stdout="mountpoint\t/tank/new\ncanmount\ton\n")
    typed = {"passphrase": CANARY, "passphrase_confirm": CANARY, "pbkdf2iters": 100_000}
    op = run_queued(services.encrypted_create_start, host=host, user=admin_user, name="tank/new", **typed)
    assert op.status == "succeeded", op.message
    made = next(c for c in fake.calls if c.argv[:2] == ["zfs", "create"])
    assert "-o keylocation=prompt -o pbkdf2iters=100000 --" in " ".join(made.argv), made.argv
