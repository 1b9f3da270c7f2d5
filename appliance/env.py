"""Strict readers for settings taken from the environment (no module reads settings at import)."""

import os
import secrets
from pathlib import Path

_TRUE = {"true", "1", "yes", "on"}
_FALSE = {"false", "0", "no", "off", ""}


class EnvError(ValueError):
    """An environment variable holds a value of the wrong shape."""


def env_str(name: str, default: str = "") -> str:
    """A string, or the contents of the file named by NAME_FILE (for secrets)."""
    file_name = os.environ.get(f"{name}_FILE")
    if file_name:
        return Path(file_name).read_text().strip()
    return os.environ.get(name, default)


def env_bool(name: str, default: bool = False) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise EnvError(f"{name} must be true or false, not {raw!r}")


def env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        return int(raw.strip())
    except ValueError:
        raise EnvError(f"{name} must be a whole number, not {raw!r}") from None


def env_list(name: str, default: str = "") -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


def secret_key(data_dir: Path) -> str:
    """DJANGO_SECRET_KEY(_FILE), else a key generated once into a 0600 file under the data dir."""
    given = env_str("DJANGO_SECRET_KEY")
    if given:
        return given
    path = data_dir / "secret_key"
    if not path.exists():
        data_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(secrets.token_urlsafe(64))
    return path.read_text().strip()
