"""Tarn's per-install key for what it keeps sealed (escrowed dataset keys): an age X25519 identity (pyrage, the
Python binding of the age format) generated once into the data dir. Anything seals with its public half; only a
process that can read the identity (the workers, as root) opens a sealed value. A copy of the database alone
opens nothing."""

import base64
import os
from pathlib import Path

import pyrage
from pyrage import x25519

from appliance import datadir


class VaultError(Exception):
    """The vault's key is missing or unreadable here, or a sealed value does not open with it."""


def vault_dir() -> Path:
    """The vault's folder, checked (root's alone: appliance.datadir) before a key in it is used."""
    try:
        return datadir.key_folder("vault")
    except datadir.LayoutError as exc:
        raise VaultError(str(exc)) from None


def ensure_identity() -> Path:
    """The identity file, made on first use (0600; its public half beside it, 0640), checked before it is used."""
    folder = vault_dir()
    identity = folder / "identity.age"
    if not os.path.lexists(identity):
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        key = x25519.Identity.generate()
        datadir.write_file(folder / "recipient.txt", f"{key.to_public()}\n".encode(), 0o640)
        datadir.write_file(identity, f"{key}\n".encode(), 0o600)
    return _checked(identity, private=True)


def _checked(path: Path, *, private: bool) -> Path:
    try:
        return datadir.key_file(path, private=private)
    except datadir.LayoutError as exc:
        raise VaultError(str(exc)) from None


def _recipient() -> x25519.Recipient:
    path = vault_dir() / "recipient.txt"
    if not path.exists():
        try:
            ensure_identity()
        except OSError as exc:
            raise VaultError(f"Tarn's vault key is not made yet ({exc.strerror}): restart the workers") from None
    return x25519.Recipient.from_str(_checked(path, private=False).read_text().strip())


def seal(value: str) -> str:
    """value encrypted to the install's key, as text for a database column."""
    return base64.b64encode(pyrage.encrypt(value.encode(), [_recipient()])).decode()


def unseal(sealed: str) -> str:
    try:
        identity = x25519.Identity.from_str(ensure_identity().read_text().strip())
        return pyrage.decrypt(base64.b64decode(sealed), [identity]).decode()
    except OSError as exc:
        raise VaultError(f"Tarn's vault key cannot be read here ({exc.strerror})") from None
    except (pyrage.DecryptError, ValueError) as exc:
        raise VaultError(f"a sealed value does not open with this install's key ({exc})") from None


def age_work_refused(exc: Exception) -> bool:
    """Whether age refused a passphrase-sealed file for the work its scrypt asks for, not for the passphrase: rage
    allows 16 times what scrypt costs on this machine now, timed at that moment, so a file sealed on a quiet machine
    may not open on a busy or slower one until it is quieter."""
    return isinstance(exc, pyrage.DecryptError) and "excessive work" in str(exc).lower()


AGE_WORK_REFUSED = (
    "age will not open this file while this machine is this busy (it sizes the work it allows by timing the machine "
    "now, and the file was sealed on a quieter one): try again when the machine is quieter."
)
