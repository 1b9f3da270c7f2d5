"""Replication of natively encrypted datasets between the two guests (issue 26): the stream is raw, so the replica is
encrypted with the source's own key, stays locked on the target (an incremental goes into it locked) and opens there
with the source's passphrase through Tarn's unlock; both ways: pushed by the first guest, pulled by the first guest
from the second. One test: the guests are emulated, and every host set-up, pairing and run costs seconds of theirs."""

import pytest

from appliance.services import host_refresh_facts
from encryption import selectors as encryption_selectors
from encryption import services as encryption
from pools import selectors as pools
from pools.models import Dataset
from pools.services import Scope, inventory_refresh
from replication import services
from replication.choices import Direction
from replication.models import Pair, TaskRun
from tests.lab.test_replication import TARGET, wire, wire_pair  # noqa: F401 (wire: the two guests' fixture)

pytestmark = pytest.mark.lab
PUSH_PASS = "the first guest's own passphrase"  # tank/vault's: pushed to backup/lab/vault on the second guest
ROUNDS = 100_000  # ZFS's least: a passphrase loads in ~2.5 s under emulation, not ~8 s (350,000)
PULL_PASS = "the second guest's own passphrase"  # backup/safe's: pulled into tank/safe on the first guest
WRONG_PASS = "a good passphrase, but not the source's"
STATUS = ("encryption", "encryptionroot", "keystatus", "keyformat", "keylocation", "mounted")


def _status(t, name: str) -> dict:
    """A dataset's encryption as its NAS says it (one zfs get)."""
    values = t.run(["zfs", "get", "-H", "-o", "value", ",".join(STATUS), "--", name]).stdout.split()
    return dict(zip(STATUS, values, strict=True))


def _as_received(name: str, cipher: str) -> dict:
    """What a raw receive of an encryption root leaves: the source's cipher (a plain receive below the unencrypted
    pair root would be encryption=off), its own encryption root keyed with the source's passphrase (the wrapped key
    came in the stream; keylocation is the receive's own "prompt"), no key loaded, not mounted."""
    return {
        "encryption": cipher,
        "encryptionroot": name,
        "keystatus": "unavailable",
        "keyformat": "passphrase",
        "keylocation": "prompt",
        "mounted": "no",
    }


def test_an_encrypted_dataset_goes_raw_both_ways_stays_locked_and_opens_only_with_the_sources_passphrase(
    guest,
    guest2,
    wire,  # noqa: F811 (the fixture)
    lab_host,
    admin_user,
    run_queued,
):
    """Push (wire's pair 1, first guest to second): tank/vault, made encrypted through Tarn with a passphrase, lands
    as backup/lab/vault encrypted with the source's cipher, its own encryption root, key not loaded, not mounted;
    Tarn's inventory of the second guest shows it locked and lists it among its encryption roots; another
    passphrase does not open it (the failure names it, nothing unlocks), the source's does and the file reads back.
    Locked again through Tarn, the next run's incremental goes into it and leaves it locked; unlocked, the new file
    is there. Pull (a pair made through Tarn, the first guest dials the second): backup/safe lands as tank/safe the
    same way and opens there with its source's passphrase."""
    source, target, _ = wire
    lab2 = guest2.add_host(name="lab2")
    host_refresh_facts(host=lab_host)  # the pull pair's target must have ZFS (as last read); nothing else reads facts
    for host in (lab_host, lab2):
        inventory_refresh(host=host)

    def do(start, **kwargs):
        op = run_queued(start, user=admin_user, **kwargs)
        assert op.status == "succeeded", (op.message, op.log)
        return op

    # --- push: the first guest sends tank/vault into the second's backup/lab --------------------------------------
    do(
        encryption.encrypted_create_start,
        host=lab_host,
        name="tank/vault",
        passphrase=PUSH_PASS,
        passphrase_confirm=PUSH_PASS,
        pbkdf2iters=ROUNDS,
    )
    cipher = Dataset.objects.get(host=lab_host, name="tank/vault").encryption["cipher"]
    guest.sh("echo 'one: before the first run' > /tank/vault/one && zfs snapshot tank/vault@a")
    push = services.task_save(pair=wire_pair(lab_host, lab2), source_dataset="tank/vault", target_name="vault")
    op = do(services.task_run_start, task=push)
    assert TaskRun.objects.get(operation=op).status == "succeeded", op.message
    replica = "backup/lab/vault"
    assert _status(target, replica) == _as_received(replica, cipher), "raw: encrypted as the source, locked"

    inventory_refresh(host=lab2, scope=Scope(trees=[replica]))
    row = Dataset.objects.get(host=lab2, name=replica)
    locked = {"cipher": cipher, "root": replica, "key": "unavailable", "format": "passphrase", "location": "prompt"}
    assert row.locked and row.encryption == locked, row.encryption
    roots = {r["name"]: r for r in encryption_selectors.roots_overview(host=lab2)}
    assert replica in roots and roots[replica]["locked"], sorted(roots)

    op = run_queued(encryption.unlock_start, host=lab2, user=admin_user, roots=[replica], secret=WRONG_PASS)
    assert op.status == "failed" and replica in op.message and "nothing was unlocked" in op.message, op.message
    do(encryption.unlock_start, host=lab2, roots=[replica], secret=PUSH_PASS)
    assert target.run(["cat", "--", f"/{replica}/one"]).stdout == "one: before the first run\n"

    # Locked again (as an admin who looked inside would leave it), the next run's incremental goes into it without
    # its key (a full stream could not land on it: the receive has no -F) and leaves it locked and unmounted.
    do(encryption.lock_start, host=lab2, root=replica)
    guest.sh("echo 'two: after the first run' > /tank/vault/two && zfs snapshot tank/vault@b")
    op = do(services.task_run_start, task=push)
    run = TaskRun.objects.get(operation=op)
    assert run.status == "succeeded" and run.sent > 0, (run.status, op.message, op.log)
    assert _status(target, replica) == _as_received(replica, cipher), "the incremental left it as it was: locked"
    do(encryption.unlock_start, host=lab2, roots=[replica], secret=PUSH_PASS)
    read = target.run(["cat", "--", f"/{replica}/one", f"/{replica}/two"]).stdout
    assert read == "one: before the first run\ntwo: after the first run\n", read
    assert set(pools.snapshot_names(host=lab2, dataset=replica)) == {"a", "b"}  # as the unlock's refresh read them

    # --- pull: the first guest dials the second and takes backup/safe into its tank ---------------------------------
    # (after wire_pair: that row takes pk 1 by hand, the pull pair the next one)
    do(
        encryption.encrypted_create_start,
        host=lab2,
        name="backup/safe",
        passphrase=PULL_PASS,
        passphrase_confirm=PULL_PASS,
        pbkdf2iters=ROUNDS,
    )
    pulled_cipher = Dataset.objects.get(host=lab2, name="backup/safe").encryption["cipher"]
    guest2.sh("echo 'pulled from the second guest' > /backup/safe/f && zfs snapshot backup/safe@a")
    op = do(
        services.pair_start,
        source=lab2,
        target=lab_host,
        address=TARGET,
        root="tank",
        direction=Direction.PULL,
        send_root="backup/safe",
        quota="1G",
    )
    pull_pair = Pair.objects.get(pk=op.params["pair"])
    pull = services.task_save(pair=pull_pair, source_dataset="backup/safe", target_name="safe")
    op = do(services.task_run_start, task=pull)
    assert TaskRun.objects.get(operation=op).status == "succeeded", op.message
    assert _status(source, "tank/safe") == _as_received("tank/safe", pulled_cipher), "raw the other way too"

    inventory_refresh(host=lab_host, scope=Scope(trees=["tank/safe"]))
    assert Dataset.objects.get(host=lab_host, name="tank/safe").locked
    do(encryption.unlock_start, host=lab_host, roots=["tank/safe"], secret=PULL_PASS)
    assert source.run(["cat", "--", "/tank/safe/f"]).stdout == "pulled from the second guest\n"
