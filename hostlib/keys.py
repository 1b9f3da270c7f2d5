"""Tarn's own SSH identity: generated once, its public half shown to the admin to authorise."""

from pathlib import Path

from hostlib.runner import SAFE_PATH, _spawn


def ensure_identity(directory: Path) -> Path:
    """Path of Tarn's ed25519 private key under directory, generating it on first use."""
    key = directory / "id_ed25519"
    if not key.exists():
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        _spawn(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "tarn", "-f", str(key)],
            timeout=30,
            input=None,
            env={"PATH": SAFE_PATH},
        )
        key.with_suffix(".pub").chmod(0o640)  # ssh-keygen follows the umask: the key shown to admins is root's alone
    return key


def public_key(directory: Path) -> str:
    """The public half, or "" before the workers' start has made the key (the web cannot read or make the private
    half: it runs unprivileged)."""
    try:
        return (directory / "id_ed25519.pub").read_text().strip()
    except OSError:
        return ""


def is_private_key(path: Path) -> bool:
    try:
        head = path.read_text(errors="replace")[:100]
    except OSError:
        return False
    return "PRIVATE KEY-----" in head
