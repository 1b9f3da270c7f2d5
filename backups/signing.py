"""Which backups this Tarn made. A backup is sealed to a public age key (the schedule's is in the database, so in
every backup, and the web reads it): whoever holds it can seal a file that opens with the passphrase and passes every
other check. So each backup made here also carries an HMAC-SHA256 of its members under a key only this machine's root
holds: vault/backup.key (0600, made on the first backup, never put in a backup, kept across restores). A backup
whose signature verifies was made by this Tarn; any other (unsigned, made on another machine or by an older Tarn, or
altered) is "made elsewhere", which the restore page says and an admin accepts by typing it."""

import hashlib
import hmac
import os
import secrets
from pathlib import Path

from appliance import datadir, vault
from backups import archive

KEY = "backup.key"
SCHEME = b"tarn-backup-hmac-sha256 "


def _path() -> Path:
    return vault.vault_dir() / KEY


def _key(*, create: bool) -> bytes | None:
    """The signing key, checked (root's alone) before it is read; made when asked and missing."""
    path = _path()
    if create and not os.path.lexists(path):
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w") as fh:
            os.fchmod(fh.fileno(), 0o600)
            fh.write(secrets.token_hex(32) + "\n")
    if not os.path.lexists(path):
        return None
    return bytes.fromhex(datadir.key_file(path).read_text().strip())


def _mac(key: bytes, members: dict[str, bytes]) -> bytes:
    """Over each signed member's name, length and digest, in a fixed order: nothing can move between members."""
    mac = hmac.new(key, digestmod=hashlib.sha256)
    for name in archive.SIGNED:
        data = members.get(name, b"")
        mac.update(name.encode() + b"\0" + len(data).to_bytes(8, "big") + hashlib.sha256(data).digest())
    return mac.digest()


def sign(members: dict[str, bytes]) -> bytes:
    """The signature member of a backup made now, by this Tarn."""
    return SCHEME + _mac(_key(create=True), members).hex().encode()


def made_here(members: dict[str, bytes]) -> bool:
    """Whether this Tarn made (and signed) these members; False for an unsigned, foreign or altered backup."""
    given = members.get(archive.SIGNATURE, b"")
    key = _key(create=False)
    if key is None or not given.startswith(SCHEME):
        return False
    return hmac.compare_digest(given[len(SCHEME) :].strip(), _mac(key, members).hex().encode())
