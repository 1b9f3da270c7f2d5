"""The backup file's passphrase layer: fixed scrypt parameters, so a backup opens on any machine at any load, and a
key line from before (age's passphrase mode) still opens, or says why not when the machine is too busy for it."""

import base64
import re

import pyrage
import pytest
from pyrage import x25519

from backups import archive

PASS = "canary-7f3e correct horse battery"


def _age_line(identity: x25519.Identity, log_n: int | None = None) -> str:
    """A key line as Tarn wrote it before: the identity age-encrypted with the passphrase; log_n rewrites the work
    factor its scrypt stanza asks for (age checks it against this machine before anything else)."""
    raw = pyrage.passphrase.encrypt(str(identity).encode(), PASS)
    if log_n is not None:
        raw = re.sub(rb"(-> scrypt \S+) \d+", rb"\1 " + str(log_n).encode(), raw, count=1)
    return base64.b64encode(raw).decode()


def test_a_key_line_has_fixed_parameters_opens_with_the_passphrase_only_and_binds_them():
    recipient, line = archive.new_key(PASS)
    kind, log_n, salt, sealed = line.split(" ")
    assert (kind, int(log_n), len(base64.b64decode(salt))) == ("scrypt", archive.SCRYPT_LOG_N, 16)
    assert PASS not in line and "AGE-SECRET-KEY" not in line
    assert str(archive.unwrap(line, PASS).to_public()) == recipient
    with pytest.raises(archive.ArchiveError) as caught:
        archive.unwrap(line, PASS + "x")
    assert caught.value.field == "passphrase" and "Wrong passphrase" in str(caught.value)
    # The parameters are bound: a lower work factor written into the line does not open it.
    with pytest.raises(archive.ArchiveError):
        archive.unwrap(line.replace(f" {log_n} ", f" {int(log_n) - 1} "), PASS)
    # A hostile line asking for more work than a backup ever needs is refused before any is done.
    for asked in ("30", "14", "x"):
        with pytest.raises(archive.ArchiveError) as caught:
            archive.unwrap(" ".join(("scrypt", asked, salt, sealed)), PASS)
        assert caught.value.field == "file" and "damaged" in str(caught.value)


def test_an_older_backups_age_key_line_opens_and_too_much_work_for_this_machine_is_said_not_a_wrong_passphrase():
    identity = x25519.Identity.generate()
    assert str(archive.unwrap(_age_line(identity), PASS)) == str(identity)
    with pytest.raises(archive.ArchiveError) as caught:
        archive.unwrap(_age_line(identity), "not the passphrase")
    assert caught.value.field == "passphrase"
    # What a backup made on a quiet machine met on a busy one: age refuses a work factor past its timing of now.
    with pytest.raises(archive.ArchiveError) as caught:
        archive.unwrap(_age_line(identity, log_n=40), PASS)
    assert caught.value.field == "file" and "busy" in str(caught.value) and "Wrong passphrase" not in str(caught.value)


def test_a_sealed_backup_opens_with_its_members():
    recipient, line = archive.new_key(PASS)
    members = {archive.MANIFEST: b'{"format": 1}', archive.DATABASE: b"db"}
    members |= {name: name.encode() for name in archive.SECRETS}
    data = archive.seal(members, recipient=recipient, wrapped=line)
    assert data.startswith(archive.MAGIC + b"scrypt 18 ")
    assert archive.open_(data, PASS) == members
