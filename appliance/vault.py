"""Tarn's per-install key for what it keeps sealed (escrowed dataset keys): an age X25519 identity (pyrage, the
Python binding of the age format) generated once into the data dir. Anything seals with its public half; only a
process that can read the identity (the workers, as root) opens a sealed value. A copy of the database alone
opens nothing."""

import base64
import os
from pathlib import Path

import pyrage
from django.conf import settings
from pyrage import x25519


class VaultError(Exception):
    """The vault's key is missing or unreadable here, or a sealed value does not open with it."""


def vault_dir() -> Path:
    return settings.DATA_DIR / "vault"


def ensure_identity() -> Path:
    """The identity file, made on first use (0600; its public half beside it, 0644)."""
    folder = vault_dir()
    identity = folder / "identity.age"
    if not identity.exists():
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        key = x25519.Identity.generate()
        fd = os.open(identity, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(f"{key}\n")
        (folder / "recipient.txt").write_text(f"{key.to_public()}\n")
    return identity


def _recipient() -> x25519.Recipient:
    path = vault_dir() / "recipient.txt"
    if not path.exists():
        try:
            ensure_identity()
        except OSError as exc:
            raise VaultError(f"Tarn's vault key is not made yet ({exc.strerror}): restart the workers") from None
    return x25519.Recipient.from_str(path.read_text().strip())


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
