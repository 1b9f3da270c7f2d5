"""zfs: datasets, zvols and snapshots — listed once per pool for the inventory, changed through exact argv."""

import io
import json
import re
import secrets
from collections.abc import Iterator
from dataclasses import dataclass

from hostlib import names
from hostlib.errors import CommandFailed, HostError, PathNotAllowed, error_for
from hostlib.runner import Transport

# What the inventory keeps per dataset: one `zfs list` per pool reads all of it.
LIST_PROPERTIES = (
    "used",
    "available",
    "referenced",
    "compressratio",
    "mountpoint",
    "compression",
    "recordsize",
    "quota",
    "refquota",
    "reservation",
    "refreservation",
    "sync",
    "atime",
    "relatime",
    "volsize",
    "volblocksize",
    "primarycache",
    "secondarycache",
    "dedup",
    "xattr",
    "acltype",
    "casesensitivity",
    "snapdir",
    "creation",
    "encryption",  # off, or the cipher (aes-256-gcm …)
    "encryptionroot",  # the dataset whose key unlocks this one
    "keystatus",  # available / unavailable (locked)
    "keyformat",
    "keylocation",
    "mounted",  # yes / no (a locked or unmounted filesystem's mountpoint is an empty folder)
)
ENCRYPTION_PROPERTIES = ("encryption", "encryptionroot", "keystatus", "keyformat", "keylocation")
# userrefs: how many holds; createtxg: the pool's transaction group that made it, what orders a dataset's snapshots
# (creation is in whole seconds: two snapshots of one second, a recursive or scheduled set, tie on it)
SNAPSHOT_FIELDS = ("name", "used", "referenced", "creation", "userrefs", "createtxg")


@dataclass
class Property:
    value: str
    source: str  # local, inherited, default, received, temporary, none
    inherited_from: str = ""


@dataclass
class DatasetInfo:
    name: str
    type: str  # filesystem, volume
    pool: str
    properties: dict[str, Property]

    def number(self, key: str) -> int | None:
        prop = self.properties.get(key)
        try:
            return int(prop.value) if prop else None
        except ValueError:
            return None


@dataclass
class SnapshotInfo:
    dataset: str
    name: str  # after the @
    used: int
    referenced: int
    creation: int
    holds: int = 0
    createtxg: int = 0


_DECODER = json.JSONDecoder()
_SPACE = re.compile(r"[ \t\n\r]*")


def _after_space(text: str, at: int) -> int:
    return _SPACE.match(text, at).end()


def _key(text: str, at: int) -> tuple[str, int]:
    """A JSON object's key at text[at] and where its value starts."""
    if text[at] != '"':
        raise ValueError(f"not a JSON object member at {at}")
    key, at = json.decoder.scanstring(text, at + 1)
    at = _after_space(text, at)
    if text[at] != ":":
        raise ValueError(f"no ':' after a JSON key at {at}")
    return key, _after_space(text, at + 1)


def _after_member(text: str, at: int) -> int:
    """Past the ',' after a member's value (or at the object's '}')."""
    at = _after_space(text, at)
    if text[at] == ",":
        return _after_space(text, at + 1)
    if text[at] != "}":
        raise ValueError(f"no ',' between JSON members at {at}")
    return at


def iter_list(text: str) -> Iterator[tuple[str, str]]:
    """`zfs list -j` → (name, that dataset's own JSON text), one at a time: the document is never decoded whole
    (10,000 datasets' properties as Python objects are ~150 MB, their text ~20 MB). ValueError if it is not JSON."""
    if not text.strip():
        return
    try:
        at = _after_space(text, 0)
        if text[at] != "{":
            raise ValueError("not a JSON object")
        at = _after_space(text, at + 1)
        while text[at] != "}":
            key, at = _key(text, at)
            if key == "datasets" and text[at] == "{":
                at = _after_space(text, at + 1)
                while text[at] != "}":
                    name, start = _key(text, at)
                    end = _DECODER.raw_decode(text, start)[1]
                    yield name, text[start:end]
                    at = _after_member(text, end)
                at += 1
            else:
                at = _DECODER.raw_decode(text, at)[1]
            at = _after_member(text, at)
    except IndexError:
        raise ValueError("the JSON text ends too early") from None


def dataset_info(name: str, member: str | dict) -> DatasetInfo:
    """One dataset of `zfs list -j --json-int -o …` (its JSON text or value): each property's value and source."""
    raw = json.loads(member) if isinstance(member, str) else member
    props = {}
    for key, prop in raw.get("properties", {}).items():
        source = prop.get("source", {})
        kind = str(source.get("type", "NONE")).lower()
        props[key] = Property(str(prop.get("value")), kind, source.get("data", "") if kind == "inherited" else "")
    return DatasetInfo(name=name, type=raw["type"].lower(), pool=raw.get("pool", name.split("/")[0]), properties=props)


def parse_list(text: str) -> list[DatasetInfo]:
    """`zfs list -j --json-int -o …` → datasets and zvols with each property's value and source."""
    return [dataset_info(name, member) for name, member in iter_list(text)]


def snapshot_groups(text: str) -> Iterator[tuple[str, str]]:
    """`zfs list -H -p -t snapshot` text → (dataset, its snapshots' lines as one text), a dataset at a time, without
    a list of every line. zfs lists a dataset's snapshots together (its sort compares the dataset's name first);
    a dataset met again later is an error, never taken for two halves of one dataset's snapshots."""
    done: set[str] = set()
    at, end, prefix, start = 0, len(text), "", 0
    while at < end:
        newline = text.find("\n", at)
        line_end = end if newline < 0 else newline
        if not (prefix and text.startswith(prefix, at, line_end)):  # a new dataset's first line
            if prefix:
                yield prefix[:-1], text[start:at]
                done.add(prefix)
            sign = text.find("@", at, line_end)
            if sign < 0:
                raise ValueError(f"not a snapshot line: {text[at : min(line_end, at + 80)]!r}")
            prefix, start = text[at : sign + 1], at
            if prefix in done:
                raise ValueError(f"zfs listed {prefix[:-1]}'s snapshots in two places")
        at = line_end + 1
    if prefix:
        yield prefix[:-1], text[start:end]


def parse_snapshots(text: str) -> Iterator[SnapshotInfo]:
    """`zfs list -H -p -t snapshot -o name,used,referenced,creation[,userrefs[,createtxg]]` → snapshots, streamed line
    by line."""
    for line in io.StringIO(text):
        line = line.rstrip("\n")
        if not line:
            continue
        name, used, referenced, creation, *more = line.split("\t")
        holds, createtxg = (int(n) for n in [*more, "0", "0"][:2])
        dataset, _, snap = name.partition("@")
        yield SnapshotInfo(dataset, snap, int(used), int(referenced), int(creation), holds, createtxg)


# A pool's listings grow with it (~5 KiB of JSON a dataset, ~80 bytes a snapshot line): room for ~25k datasets
# or ~1.6M snapshots in one pool, and still a bound on what a host can make Tarn hold.
LISTING_MAX_OUTPUT = 128 << 20


def _depth(depth: int | None) -> list[str]:
    """None: the whole tree below; 0: the dataset alone; 1: it and its children (or, for snapshots, its own)."""
    return ["-r"] if depth is None else ["-d", str(int(depth))]


def list_datasets_argv(name: str, depth: int | None = None) -> list[str]:
    """Filesystems and zvols at and below a pool or dataset, with every property the inventory keeps."""
    props = ",".join(LIST_PROPERTIES)
    return [
        "zfs",
        "list",
        "-j",
        "--json-int",
        *_depth(depth),
        "-t",
        "filesystem,volume",
        "-o",
        props,
        "--",
        names.dataset_name(name),
    ]


def list_snapshots_argv(name: str, depth: int | None = None) -> list[str]:
    """Snapshots of a pool's or dataset's tree (depth None) or of the dataset alone (depth 1)."""
    fields = ",".join(SNAPSHOT_FIELDS)
    return ["zfs", "list", "-H", "-p", "-t", "snapshot", "-o", fields, *_depth(depth), "--", names.dataset_name(name)]


def list_datasets(transport: Transport, name: str, depth: int | None = None) -> list[DatasetInfo]:
    return parse_list(
        transport.run(list_datasets_argv(name, depth), timeout=1800, max_output=LISTING_MAX_OUTPUT).stdout
    )


def list_datasets_text(transport: Transport, name: str, depth: int | None = None) -> str:
    return transport.run(list_datasets_argv(name, depth), timeout=1800, max_output=LISTING_MAX_OUTPUT).stdout


def list_snapshots_text(transport: Transport, name: str, depth: int | None = None) -> str:
    return transport.run(list_snapshots_argv(name, depth), timeout=3600, max_output=LISTING_MAX_OUTPUT).stdout


# Tarn's mark on a dataset it made for its own use (a benchmark's scratch dataset): clean-up destroys only a dataset
# carrying the mark of the run that made it, never one that was there before under the same name.
TAG_PROPERTY = "tarn:made-by"
TAG = re.compile(r"[a-z0-9][a-z0-9-]{0,63}")


def create_argv(
    name: str, props: dict, *, volume_size: str | None = None, tag: str = "", encryption: "NewKey | None" = None
) -> list[str]:
    names.dataset_name(name)
    if "/" not in name:
        raise names.InvalidName("A dataset lives inside a pool: pool/name")
    clean = names.properties(props)
    if volume_size is None and set(clean) & names.VOLUME_ONLY:
        raise names.PropertyErrors({k: "only for zvols" for k in set(clean) & names.VOLUME_ONLY})
    argv = ["zfs", "create"]
    if volume_size is not None:
        try:
            argv += ["-V", str(names.parse_size(volume_size))]
        except ValueError as exc:
            raise names.PropertyErrors({"volsize": str(exc)}) from None
    for key, value in clean.items():
        argv += ["-o", f"{key}={value}"]
    if encryption is not None:
        argv += encryption.options()
    if tag:
        if not TAG.fullmatch(tag):
            raise ValueError(f"not a tag: {tag!r}")
        argv += ["-o", f"{TAG_PROPERTY}={tag}"]
    return [*argv, "--", name]


def tag(t: Transport, name: str) -> str:
    """The mark Tarn left on a dataset it made ('' where there is none, or no such dataset)."""
    argv = ["zfs", "get", "-H", "-o", "value", TAG_PROPERTY, "--", names.dataset_name(name)]
    value = t.run(argv, check=False).stdout.strip()
    return "" if value == "-" else value


def set_argv(name: str, props: dict) -> list[str]:
    names.dataset_name(name)
    clean = names.properties(props)
    fixed = set(clean) & names.CREATE_ONLY
    if fixed:
        raise names.PropertyErrors({k: "can only be chosen when the dataset is created" for k in fixed})
    return ["zfs", "set", *(f"{k}={v}" for k, v in clean.items()), "--", name]


def inherit_argv(name: str, key: str) -> list[str]:
    names.dataset_name(name)
    if key not in names.DATASET_PROPERTIES or key in names.CREATE_ONLY:
        raise names.PropertyErrors({key: "cannot be reset to inherited"})
    return ["zfs", "inherit", key, "--", name]


def snapshot_argv(names_: list[str], *, recursive: bool = False) -> list[str]:
    """One `zfs snapshot` takes many names, atomically, but at most one per dataset (OpenZFS refuses more)."""
    datasets = [names.snapshot_name(name).split("@")[0] for name in names_]
    if len(datasets) != len(set(datasets)):
        raise names.InvalidName("One call can snapshot each dataset once; split the names over several calls")
    return ["zfs", "snapshot", *(["-r"] if recursive else []), "--", *names_]


def destroy_argv(name: str, *, recursive: bool = False) -> list[str]:
    if "@" in name:
        names.snapshot_name(name)
    else:
        names.dataset_name(name)
        if "/" not in name:
            raise names.InvalidName("Destroying a pool's root dataset means destroying the pool")
    return ["zfs", "destroy", *(["-r"] if recursive else []), "--", name]


def rollback_argv(snapshot: str, *, destroy_newer: bool = False) -> list[str]:
    names.snapshot_name(snapshot)
    return ["zfs", "rollback", *(["-r"] if destroy_newer else []), "--", snapshot]


def rename_argv(name: str, new_name: str) -> list[str]:
    """Rename a dataset or zvol within its pool (parents are not created), or a snapshot within its dataset."""
    if "@" in name:
        names.snapshot_name(name)
        names.snapshot_name(new_name)
        if name.split("@")[0] != new_name.split("@")[0]:
            raise names.InvalidName("A snapshot is renamed within its dataset")
    else:
        names.dataset_name(name)
        names.dataset_name(new_name)
        if "/" not in name or "/" not in new_name:
            raise names.InvalidName("A pool's root dataset is renamed by importing the pool under a new name")
        if name.split("/")[0] != new_name.split("/")[0]:
            raise names.InvalidName("A dataset stays in its pool (use send/receive to move it)")
        if new_name.startswith(name + "/"):
            raise names.InvalidName("A dataset cannot move below itself")
    return ["zfs", "rename", "--", name, new_name]


def clone_argv(snapshot: str, target: str, props: dict | None = None, *, readonly: bool = False) -> list[str]:
    """A dataset that starts as the snapshot's contents, in the same pool: writable, or read-only (a restore to
    look at and copy from)."""
    names.snapshot_name(snapshot)
    names.dataset_name(target)
    if "/" not in target:
        raise names.InvalidName("A clone lives inside a pool: pool/name")
    if snapshot.split("/")[0].split("@")[0] != target.split("/")[0]:
        raise names.InvalidName("A clone lives in its snapshot's pool")
    argv = ["zfs", "clone", *(["-o", "readonly=on"] if readonly else [])]
    for key, value in names.properties(props or {}).items():
        argv += ["-o", f"{key}={value}"]
    return [*argv, "--", snapshot, target]


HOLD_TAG = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$")


def hold_argv(snapshot: str | list[str], tag: str, *, release: bool = False) -> list[str]:
    """Hold a snapshot, or several in one command (none can be destroyed while any hold is on it), or release one
    tag from them."""
    snapshots = [snapshot] if isinstance(snapshot, str) else list(snapshot)
    if not snapshots:
        raise names.InvalidName("Name at least one snapshot to hold")
    for one in snapshots:
        names.snapshot_name(one)
    if not HOLD_TAG.fullmatch(tag):
        raise names.InvalidName("A hold tag is up to 64 letters, digits, '_', '.', ':' or '-'")
    return ["zfs", "release" if release else "hold", "--", tag, *snapshots]


ARCSTATS = "/proc/spl/kstat/zfs/arcstats"


def parse_arcstats(text: str) -> dict[str, int]:
    """/proc/spl/kstat/zfs/arcstats: name type data lines (size, c_max, hits, misses…)."""
    stats = {}
    for line in text.splitlines()[2:]:
        parts = line.split()
        if len(parts) == 3 and parts[2].isdigit():
            stats[parts[0]] = int(parts[2])
    return stats


def arcstats(t: Transport) -> dict[str, int]:
    """The ARC's figures now ({} where the zfs module is not loaded)."""
    return parse_arcstats(t.run(["cat", "--", ARCSTATS], check=False).stdout)


def properties(t: Transport, name: str) -> dict[str, str]:
    """Every property of one dataset with its parsable value ({} where it is gone)."""
    text = t.run(
        ["zfs", "get", "-H", "-p", "-o", "property,value", "all", "--", names.dataset_name(name)], check=False
    ).stdout
    return dict(line.split("\t", 1) for line in text.splitlines() if "\t" in line)


# --- native encryption ------------------------------------------------------------------------------------------
CIPHERS = ("aes-256-gcm", "aes-192-gcm", "aes-128-gcm", "aes-256-ccm", "aes-192-ccm", "aes-128-ccm")
KEY_FORMATS = ("passphrase", "hex", "raw")
# A passphrase is stretched with PBKDF2-HMAC-SHA1 this many rounds into the wrapping key (zfs: pbkdf2iters). ZFS
# refuses fewer than 100,000 and makes 350,000 by default; more makes a guess slower, and every unlock too.
PBKDF2_MIN, PBKDF2_DEFAULT, PBKDF2_MAX = 100_000, 350_000, 10_000_000


def pbkdf2_options(keyformat: str, rounds: int, flag: str = "-o") -> list[str]:
    """The option that sets a passphrase's rounds (none for ZFS's default, 0); only a passphrase has any."""
    if not rounds:
        return []
    if keyformat != "passphrase":
        raise names.PropertyErrors({"pbkdf2iters": "Only a passphrase is stretched: leave the rounds empty for a key."})
    if isinstance(rounds, bool) or not isinstance(rounds, int) or not PBKDF2_MIN <= rounds <= PBKDF2_MAX:
        raise names.PropertyErrors({"pbkdf2iters": f"Between {PBKDF2_MIN:,} and {PBKDF2_MAX:,} rounds."})
    return [flag, f"pbkdf2iters={rounds}"]


KEY_DIR = "/etc/tarn/keys"  # root-only (0700), outside any dataset, so no share can reach a key
KEY_FILE = re.compile(r"/etc/tarn/keys/[A-Za-z0-9][A-Za-z0-9._%+-]{0,250}\.key")
HEX_KEY = re.compile(r"[0-9a-fA-F]{64}")


class KeyRejected(ValueError):
    """The key or passphrase does not open this dataset (nothing was loaded)."""

    def __init__(self, dataset: str):
        self.dataset = dataset
        super().__init__(f"the key does not fit {dataset}")


def check_one_line(value: str, field: str = "passphrase") -> str:
    """A passphrase as Tarn takes one (a dataset's, a configuration backup's): one line, so no newline and no NUL."""
    if "\0" in value:
        raise names.PropertyErrors({field: "A passphrase may not contain a NUL character."})
    if "\n" in value or "\r" in value:
        raise names.PropertyErrors({field: "A passphrase is one line: no line breaks."})
    return value


def check_passphrase(value: str, field: str = "passphrase") -> str:
    """OpenZFS takes 8 to 512 bytes; Tarn hands it over on one line, so no newline and no NUL."""
    size = len(check_one_line(value, field).encode())
    if not 8 <= size <= 512:
        raise names.PropertyErrors({field: f"A passphrase has 8 to 512 bytes (this one has {size})."})
    return value


def check_hex_key(value: str, field: str = "key") -> str:
    """A hex key is 32 bytes written as exactly 64 hex digits (ASCII 0-9, a-f, A-F): nothing around or between them
    (no 0x, sign, separator, space or line break). A raw key travels written this way too."""
    if not isinstance(value, str) or not HEX_KEY.fullmatch(value):
        size = len(value) if isinstance(value, str) else 0
        what = "other characters than 0-9 and a-f" if size == 64 else f"{size} characters"
        raise names.PropertyErrors({field: f"A hex key is exactly 64 hex digits (0-9, a-f); this has {what}."})
    return value.lower()


def typed_secret(formats: dict[str, str], secret: str, field: str = "secret") -> dict[str, str]:
    """{root: secret} for the encryption roots ({name: keyformat}) a secret typed once is for, checked: every
    passphrase root; the hex and raw roots when it is a hex key, or when no passphrase root is among them (then it
    must be one). A typed secret is the key or an error naming the field, never passed over for a key file."""
    if not secret:
        return {}
    phrase = [name for name, keyformat in formats.items() if keyformat == "passphrase"]
    keyed = [name for name in formats if name not in phrase]
    if keyed and (not phrase or HEX_KEY.fullmatch(secret)):
        check_hex_key(secret, field)
    else:
        keyed = []
    if phrase:
        check_passphrase(secret, field)
    return dict.fromkeys(phrase + keyed, secret)


def key_file_for(dataset: str) -> str:
    """A new file for a key of this encryption root on the NAS: named after it, with a random part, so a key file is
    never replaced (a renamed dataset keeps its file, a later dataset of the old name gets its own)."""
    names.dataset_name(dataset)
    return f"{KEY_DIR}/{dataset.replace('/', '%')}.{secrets.token_hex(4)}.key"


def check_key_file(path: str, field: str = "keylocation") -> str:
    """A key file Tarn writes or loads: only a plain name in KEY_DIR (no '..', no other folder)."""
    if not KEY_FILE.fullmatch(path) or "/../" in path or path.endswith("/.."):
        raise names.PropertyErrors({field: f"A key file lives in {KEY_DIR}/ and ends in .key: {path!r} does not."})
    return path


@dataclass
class NewKey:
    """How a new encryption root is keyed: the cipher, the key's format and where ZFS finds it (prompt: handed over
    on stdin each time; a file path: loaded from the NAS at import or unlock)."""

    cipher: str = "aes-256-gcm"
    keyformat: str = "passphrase"
    keyfile: str = ""  # empty: keylocation=prompt
    pbkdf2iters: int = 0  # a passphrase's rounds; 0: ZFS's default (PBKDF2_DEFAULT)

    def options(self, flag: str = "-o") -> list[str]:
        """The create options: -o for zfs create, -O for a pool's root dataset (zpool create)."""
        problems = {}
        if self.cipher not in CIPHERS:
            problems["encryption"] = f"Choose one of: {', '.join(CIPHERS)}."
        if self.keyformat not in KEY_FORMATS:
            problems["keyformat"] = f"Choose one of: {', '.join(KEY_FORMATS)}."
        if self.keyformat == "raw" and not self.keyfile:
            problems["keylocation"] = "A raw key is kept in a key file on the NAS."
        if problems:
            raise names.PropertyErrors(problems)
        location = f"file://{check_key_file(self.keyfile)}" if self.keyfile else "prompt"
        rounds = pbkdf2_options(self.keyformat, self.pbkdf2iters, flag)
        return [
            flag,
            f"encryption={self.cipher}",
            flag,
            f"keyformat={self.keyformat}",
            flag,
            f"keylocation={location}",
        ] + rounds


def key_input(keyformat: str, secret: str) -> str | bytes:
    """What `zfs` reads on stdin for a key given at the prompt: a passphrase or hex key on one line; a raw key as
    its 32 bytes (Tarn carries raw keys as hex)."""
    if keyformat == "raw":
        return bytes.fromhex(check_hex_key(secret))  # exactly 32 bytes: 64 hex digits
    if keyformat == "hex":
        return check_hex_key(secret) + "\n"
    return check_passphrase(secret) + "\n"


def key_write(t: Transport, path: str, keyformat: str, secret: str) -> None:
    """Write a key file (root-only) in KEY_DIR; the folder is made root-only first. A link anywhere is refused."""
    check_key_file(path)
    t.folder("/etc/tarn", "root", "root", 0o755, create=True)
    t.folder(KEY_DIR, "root", "root", 0o700, create=True)
    data = key_input(keyformat, secret)
    t.write_file(path, data if isinstance(data, bytes) else data.rstrip("\n"), mode=0o400)


def _key_failed(exc: Exception, dataset: str) -> Exception:
    text = str(getattr(exc, "stderr", "")) or str(exc)
    if re.search(r"Incorrect key|invalid key|Key load error", text):
        return KeyRejected(dataset)
    return exc


def load_key(t: Transport, dataset: str, *, keyformat: str = "", secret: str | None = None, dry_run: bool = False):
    """Load an encryption root's key: from the secret given (at the prompt, whatever its keylocation), else from
    its own keylocation (a key file on the NAS). dry_run (-n): only check that the key fits; nothing loads.
    KeyRejected when it does not fit."""
    argv = ["zfs", "load-key", *(["-n"] if dry_run else []), *(["-L", "prompt"] if secret is not None else [])]
    argv += ["--", names.dataset_name(dataset)]
    data = key_input(keyformat, secret) if secret is not None else None
    try:
        t.run(argv, input=data, mutating=not dry_run, timeout=60)
    except CommandFailed as exc:
        raise _key_failed(exc, dataset) from None


def unload_key(t: Transport, dataset: str) -> None:
    t.run(["zfs", "unload-key", "--", names.dataset_name(dataset)], mutating=True, timeout=60)


def mount_tree(t: Transport, dataset: str) -> None:
    """Mount a filesystem and every filesystem below it (zfs mount -R, OpenZFS 2.2+). The filesystem named is
    mounted explicitly first: -R leaves a canmount=noauto one alone, and a replica is noauto (never mounted by
    itself, at boot or import) yet mounted when an admin unlocks it; below it, canmount is followed. A canmount=off
    one, or one mounted already, is no error."""
    name = names.dataset_name(dataset)
    done = t.run(["zfs", "mount", "--", name], mutating=True, check=False, timeout=300)
    if done.returncode and not re.search(r"already mounted|.canmount. property is set to .off.", done.stderr):
        raise error_for(["zfs", "mount", "--", name], done.returncode, done.stderr)
    t.run(["zfs", "mount", "-R", "--", name], mutating=True, timeout=300)


def unmount_tree(t: Transport, dataset: str, *, force: bool = False, unload: bool = False) -> None:
    """Unmount a filesystem and everything below it; unload: then unload the keys of the encryption roots it
    unmounted (-u). Busy when something holds a file open there, unless forced."""
    argv = ["zfs", "unmount", *(["-f"] if force else []), *(["-u"] if unload else [])]
    t.run([*argv, "--", names.dataset_name(dataset)], mutating=True, timeout=300)


def change_key(
    t: Transport,
    dataset: str,
    *,
    keyformat: str = "",
    secret: str | None = None,
    keyfile: str = "",
    inherit=False,
    pbkdf2iters: int = 0,
) -> None:
    """zfs change-key of a loaded encryption root: inherit (-i: it joins its parent's encryption root), a new key
    file on the NAS (keylocation=file://…, written first), or a new passphrase or key handed over on stdin. The data
    is not re-encrypted: only the wrapping key changes."""
    names.dataset_name(dataset)
    if inherit:
        argv = ["zfs", "change-key", "-i", "--", dataset]
    else:
        if keyformat not in KEY_FORMATS:
            raise names.PropertyErrors({"keyformat": f"Choose one of: {', '.join(KEY_FORMATS)}."})
        location = f"file://{check_key_file(keyfile)}" if keyfile else "prompt"
        argv = ["zfs", "change-key", "-o", f"keyformat={keyformat}", "-o", f"keylocation={location}"]
        argv += [*pbkdf2_options(keyformat, pbkdf2iters), "--", dataset]
    data = key_input(keyformat, secret) if secret is not None and not keyfile and not inherit else None
    t.run(argv, input=data, mutating=True, timeout=120)


def key_read(t: Transport, path: str) -> str:
    """A key file Tarn wrote, as hex (a raw key's 32 bytes are read as hex with od)."""
    check_key_file(path)
    text = t.run(["od", "-An", "-v", "-tx1", "--", path], timeout=30).stdout
    data = bytes.fromhex("".join(text.split()))
    if len(data) == 32:
        return data.hex()
    return check_hex_key(data.decode("ascii", "replace").removesuffix("\n"))  # a file written by hand ends a line


def load_keys_below(t: Transport, name: str) -> None:
    """Load every key under name that sits in a key file (-r; nothing on stdin, so a passphrase root just stays
    locked), then mount what can be (zfs mount -a skips what is still locked)."""
    t.run(["zfs", "load-key", "-r", "--", names.dataset_name(name)], check=False, mutating=True, timeout=300)
    t.run(["zfs", "mount", "-a"], check=False, mutating=True, timeout=600)


def create_keyed(t: Transport, argv: list[str], *, keyformat: str, keyfile: str, secret: str) -> None:
    """Run a `zfs create` or `zpool create` whose new encryption root takes secret: written to its key file first
    (a hex or raw key), or handed over on stdin (a passphrase)."""
    if keyfile:
        key_write(t, keyfile, keyformat, secret)
    t.run(argv, input=None if keyfile else key_input(keyformat, secret), timeout=600, mutating=True)


class MountFolderRefused(HostError):
    """A dataset's mount folder could not be checked or sealed (a link on its way, or a flag the kernel refused):
    Tarn does not mount it."""


SEAL_SAID = {
    "sealed": "made immutable while unmounted",
    "mounted": "something is mounted there",
    "checked": "no link on the way (canmount=off: not sealed, its children's folders are made in it)",
}


def seal_mount_folder(t: Transport, name: str, *, remount: bool = False) -> str:
    """Make the (empty) folder a filesystem mounts on immutable, so that while it is locked nothing can write into
    it or replace it with a link, reached without following any link (atomic.mount_folder). remount: it is mounted
    now (just made): unmount, seal, mount again. Returns what happened, for the operation's log. A link planted as
    the folder or on its way, or a seal the kernel refuses, is MountFolderRefused, and then nothing is mounted
    again (a mount would follow the link)."""
    props = properties(t, name)
    mountpoint = props.get("mountpoint", "")
    if not mountpoint.startswith("/"):
        return ""  # none, legacy or a zvol: no folder
    if remount:
        unmount_tree(t, name)
    try:
        outcome = t.mount_folder(mountpoint, seal=props.get("canmount") != "off")
    except (PathNotAllowed, CommandFailed) as exc:
        left = f"; {name} is left unmounted" if remount else ""
        raise MountFolderRefused(f"{mountpoint} could not be sealed ({str(exc)[:200]}){left}") from None
    if remount:
        mount_tree(t, name)
    return f"{mountpoint}: {SEAL_SAID.get(outcome, outcome)}"


def check_mount_folders(t: Transport, name: str) -> None:
    """Before a filesystem and those below it are mounted: refuse when the folder any of them mounts on is reached
    through a link (MountFolderRefused, nothing mounted). The folders inside the root's own filesystem appear only
    once it is mounted and are its own users' to write; the root's and those elsewhere (a mountpoint set by hand,
    or below a root that is not mounted itself: canmount=off) are checked."""
    argv = ["zfs", "list", "-H", "-r", "-t", "filesystem", "-o", "name,mountpoint,canmount"]
    text = t.run([*argv, "--", names.dataset_name(name)], timeout=120).stdout
    rows = [line.split("\t") for line in text.splitlines() if line.count("\t") == 2]
    folders = {dataset: (mountpoint, canmount) for dataset, mountpoint, canmount in rows}
    top, top_canmount = folders.get(name, ("", "off"))
    for dataset, (mountpoint, _) in folders.items():
        below = top.rstrip("/") + "/"
        inside = top_canmount != "off" and top.startswith("/") and mountpoint.startswith(below) and dataset != name
        if mountpoint.startswith("/") and not inside:
            try:
                t.mount_folder(mountpoint, seal=False)
            except PathNotAllowed as exc:
                raise MountFolderRefused(f"{dataset} is not mounted: {str(exc)[:200]}") from None
