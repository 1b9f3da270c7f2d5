"""The backup file: a tar of Tarn's database, the secrets that open what it stored and a manifest, sealed with age.

    TARN-BACKUP 1\\n
    scrypt <log2 N> <salt> <the backup's own age X25519 identity, sealed with a key scrypt derives from the passphrase>\\n
    <the tar (gzip), age-encrypted to that identity's public half>

Why a key of its own and not age's passphrase mode on the whole file: a scheduled backup must be sealed with no one
there to type the passphrase, and the passphrase is never stored. So the schedule keeps the public half (it seals,
it opens nothing) and the identity wrapped with the passphrase; a backup made on demand gets a fresh identity. Either
way the file opens with the passphrase alone, on any machine. A wrong passphrase fails on the first part; a file cut
short or altered fails age's authentication on the second (every 64 KiB chunk is authenticated).

Only the members below are taken from a tar, as regular files: a link, a folder, a device, a path with "..", or any
other name is refused before anything is used.

The passphrase layer is scrypt (N = 2^18, r = 8, p = 1) and ChaCha20-Poly1305 from pyca/cryptography, with fixed
parameters written in the key line. Backups before that wrapped the identity with age's own passphrase mode, which
picks its work factor by timing this machine and refuses to open a file needing more than 16 times that: a backup
made on a quiet NAS then read "wrong passphrase" on a busy or slower one. Those older key lines still open (through
age); when age refuses for that reason the error says so. The last member, the signature, says which Tarn made the backup: the
age layer proves only that whoever sealed it knew a public key (backups.signing)."""

import base64
import gzip
import hashlib
import io
import json
import os
import tarfile

import pyrage
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305
from cryptography.hazmat.primitives.kdf.scrypt import Scrypt
from pyrage import passphrase as age_passphrase
from pyrage import x25519

from appliance import vault

MAGIC = b"TARN-BACKUP 1\n"
FORMAT = 1
MANIFEST = "manifest.json"
DATABASE = "tarn.sqlite3"
SECRET_KEY = "secrets/secret_key"
VAULT_IDENTITY = "secrets/vault/identity.age"
VAULT_RECIPIENT = "secrets/vault/recipient.txt"
SSH_KEY = "secrets/ssh/id_ed25519"
SSH_PUBLIC = "secrets/ssh/id_ed25519.pub"
SECRETS = (SECRET_KEY, VAULT_IDENTITY, VAULT_RECIPIENT, SSH_KEY, SSH_PUBLIC)
SIGNATURE = "signature"  # which Tarn made it (backups.signing); a backup without one is "made elsewhere"
SIGNED = (MANIFEST, DATABASE, *SECRETS)
MEMBERS = (*SIGNED, SIGNATURE)
MAX_MEMBER = 2 << 30  # what one member may unpack to (the database)
MAX_SECRET = 64 << 10
MAX_HEADER = 4096
MAX_UNPACKED = MAX_MEMBER + (4 << 20)  # the database, the secrets, the manifest and the tar's own headers
SCRYPT_LOG_N = 18  # 256 MiB and ~1 s on the lab machine; the same on every machine, whatever its load
SCRYPT_LOG_N_READ = range(15, 20)  # what a key line may ask for (hostile input: at most 512 MiB of work)
KEY_LINE = "scrypt"


class ArchiveError(ValueError):
    """The file cannot be used; field names the form field the problem is about (file or passphrase)."""

    def __init__(self, message: str, field: str = "file"):
        super().__init__(message)
        self.field = field


def new_key(passphrase: str) -> tuple[str, str]:
    """A fresh identity for backups: (its public half, the key line: the identity sealed with the passphrase)."""
    identity = x25519.Identity.generate()
    salt = os.urandom(16)
    sealed = ChaCha20Poly1305(_derived(passphrase, salt, SCRYPT_LOG_N)).encrypt(
        bytes(12), str(identity).encode(), _bound(SCRYPT_LOG_N)
    )
    line = " ".join((KEY_LINE, str(SCRYPT_LOG_N), _b64(salt), _b64(sealed)))
    return str(identity.to_public()), line


def unwrap(line: str, passphrase: str) -> x25519.Identity:
    """The identity in a key line, opened with the passphrase (ArchiveError for a wrong one, or a damaged line)."""
    if not line.startswith(KEY_LINE + " "):
        return _unwrap_age(line, passphrase)
    try:
        _, log_n, salt, sealed = line.split(" ")
        log_n, salt, sealed = int(log_n), base64.b64decode(salt, validate=True), base64.b64decode(sealed, validate=True)
    except ValueError:
        raise ArchiveError("The file is damaged: its key line is not as Tarn writes it.") from None
    if log_n not in SCRYPT_LOG_N_READ or len(salt) != 16:
        raise ArchiveError(f"The file is damaged: its key line asks for scrypt with N = 2^{log_n}.")
    try:
        opened = ChaCha20Poly1305(_derived(passphrase, salt, log_n)).decrypt(bytes(12), sealed, _bound(log_n))
        return x25519.Identity.from_str(opened.decode())
    except (InvalidTag, pyrage.IdentityError, UnicodeDecodeError, ValueError):
        raise ArchiveError("Wrong passphrase: this backup does not open with it.", "passphrase") from None


def _derived(passphrase: str, salt: bytes, log_n: int) -> bytes:
    return Scrypt(salt=salt, length=32, n=1 << log_n, r=8, p=1).derive(passphrase.encode())


def _bound(log_n: int) -> bytes:
    """The associated data: the key line's own parameters, so none can be changed unnoticed."""
    return f"{MAGIC.decode().strip()} {KEY_LINE} {log_n}".encode()


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _unwrap_age(wrapped: str, passphrase: str) -> x25519.Identity:
    """A key line of a backup made before the fixed scrypt: the identity age-encrypted with the passphrase."""
    try:
        raw = base64.b64decode(wrapped, validate=True)
    except ValueError:
        raise ArchiveError("The file is damaged: its key line is not base64.") from None
    try:
        return x25519.Identity.from_str(age_passphrase.decrypt(raw, passphrase).decode().strip())
    except pyrage.DecryptError as exc:
        if vault.age_work_refused(exc):
            raise ArchiveError(
                f"This backup was made by an older Tarn, sealed with age's passphrase mode: {vault.AGE_WORK_REFUSED}"
            ) from None
        raise ArchiveError("Wrong passphrase: this backup does not open with it.", "passphrase") from None
    except (pyrage.IdentityError, UnicodeDecodeError, ValueError):
        raise ArchiveError("Wrong passphrase: this backup does not open with it.", "passphrase") from None


def seal(members: dict[str, bytes], *, recipient: str, wrapped: str) -> bytes:
    """The backup file's bytes; members are written in MEMBERS order (the manifest first)."""
    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, mode="wb", compresslevel=1, mtime=0) as zipped:
        with tarfile.open(fileobj=zipped, mode="w", format=tarfile.PAX_FORMAT) as tar:
            for name in MEMBERS:
                if name not in members:
                    continue
                info = tarfile.TarInfo(name)
                info.size, info.mode = len(members[name]), 0o600
                tar.addfile(info, io.BytesIO(members[name]))
    payload = pyrage.encrypt(buffer.getvalue(), [x25519.Recipient.from_str(recipient)])
    return MAGIC + wrapped.encode() + b"\n" + payload


def looks_like_backup(head: bytes) -> bool:
    return head.startswith(MAGIC)


def open_(data: bytes, passphrase: str) -> dict[str, bytes]:
    """The members of a backup file, checked: ArchiveError says what is wrong, and nothing was used."""
    if not passphrase:
        raise ArchiveError("Give the backup's passphrase.", "passphrase")
    if not data.startswith(MAGIC):
        kind = "an age file" if data.startswith(b"age-encryption.org/") else "not a file Tarn wrote"
        raise ArchiveError(f"This is not a Tarn configuration backup ({kind}): it does not start with TARN-BACKUP.")
    rest = data[len(MAGIC) :]
    end = rest.find(b"\n", 0, MAX_HEADER)
    if end < 0:
        raise ArchiveError("The file is damaged or cut short: its key line has no end.")
    identity = unwrap(rest[:end].decode(errors="replace"), passphrase)
    try:
        tar_bytes = pyrage.decrypt(rest[end + 1 :], [identity])
    except pyrage.DecryptError:
        raise ArchiveError(
            "The file is damaged, cut short or altered: it fails age's authentication (the passphrase is right)."
        ) from None
    return _members(tar_bytes)


class _Capped(io.RawIOBase):
    """The gunzipped tar, read as a stream that stops past MAX_UNPACKED: a header that claims gigabytes (a pax
    record, a long name) cannot make the reader hold more than a backup can be."""

    def __init__(self, data: bytes):
        self.zipped, self.read_so_far = gzip.GzipFile(fileobj=io.BytesIO(data)), 0

    def readable(self):
        return True

    def read(self, size=-1):
        chunk = self.zipped.read(size if size and size > 0 else 1 << 20)
        self.read_so_far += len(chunk)
        if self.read_so_far > MAX_UNPACKED:
            raise ArchiveError("Refused: the backup unpacks to more than a Tarn backup can be.")
        return chunk


def _members(tar_bytes: bytes) -> dict[str, bytes]:
    found: dict[str, bytes] = {}
    try:
        with tarfile.open(fileobj=_Capped(tar_bytes), mode="r|") as tar:
            for info in tar:
                name = info.name
                if name.startswith("/") or ".." in name.split("/"):
                    raise ArchiveError(f"Refused: the backup holds a path outside its folder ({name[:80]}).")
                if info.issym() or info.islnk():
                    raise ArchiveError(f"Refused: the backup holds a link ({name[:80]} → {info.linkname[:80]}).")
                if not info.isreg():
                    raise ArchiveError(f"Refused: the backup holds something that is not a plain file ({name[:80]}).")
                if name not in MEMBERS:
                    raise ArchiveError(f"Refused: the backup holds a file Tarn does not write ({name[:80]}).")
                if name in found:
                    raise ArchiveError(f"Refused: the backup holds {name} twice.")
                limit = MAX_MEMBER if name == DATABASE else MAX_SECRET
                if info.size > limit:
                    raise ArchiveError(f"Refused: {name} in the backup is larger than Tarn writes.")
                found[name] = tar.extractfile(info).read()
    except (tarfile.TarError, EOFError, OSError, gzip.BadGzipFile) as exc:
        raise ArchiveError(f"The backup's contents are damaged ({exc}).") from None
    missing = [n for n in (MANIFEST, DATABASE) if n not in found]
    if missing:
        raise ArchiveError(f"The backup is incomplete: it has no {', '.join(missing)}.")
    absent = [n for n in SECRETS if n not in found]
    if absent:
        raise ArchiveError(
            "The backup holds no secrets of its install ("
            + ", ".join(a.removeprefix("secrets/") for a in absent)
            + "): "
            "without them the keys, passwords and SSH access it names cannot be used, so it is not restored."
        )
    try:
        manifest = json.loads(found[MANIFEST])
    except ValueError:
        raise ArchiveError("The backup's manifest is not JSON.") from None
    shape = manifest.get("format") if isinstance(manifest, dict) else None
    if shape != FORMAT:
        raise ArchiveError(f"The backup's manifest is of another format ({str(shape)[:20]}).")
    return found


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
