"""iSCSI targets on zvols with the kernel's LIO, through Debian's python3-rtslib-fb (its `targetctl`): Tarn renders the
whole configuration as rtslib's saveconfig.json (/etc/rtslib-fb-target/saveconfig.json, root's alone: CHAP secrets
must be there in clear for the kernel), writes it atomically and has `targetctl restore` apply it; Debian's
rtslib-fb-targetctl.service restores the same file at boot, ordered after the zvols by a drop-in
(After=zfs-volumes.target: without it a restore at boot finds no zvol and skips its LUNs). Tarn owns the file and
never saves it from the live state (what lost configurations after a reboot: targetcli-fb #39, #85). A change
re-creates the targets (`targetctl restore` clears first): initiators reconnect within seconds and retry their I/O.

Why rtslib-fb and not configfs written by hand: it is LIO's maintained library (targetcli's own), it knows the order
configfs wants (storage, target, portal group attributes, LUNs, portals, ACLs, enable) and Debian ships its boot
restore; Tarn adds only validation and the rendering.

Names (RFC 3720/3722, as rtslib normalizes them): iqn.YYYY-MM.reversed.domain[:anything], eui.<16 hex>,
naa.<16 or 32 hex>; lower case; at most 223 bytes (the kernel's ISCSI_IQN_LEN - 1). CHAP secrets: 12 to 16
characters (RFC 3720 8.2.1: under 12 needs IPsec), printable ASCII without spaces; a mutual secret differs from the
initiator's."""

import ipaddress
import json
import re
import time
import uuid
from dataclasses import dataclass, field

from hostlib import names, net
from hostlib.configfiles import ConfigRejected, current
from hostlib.errors import InvalidField, last_line
from hostlib.runner import Transport

CONFIG = "/etc/rtslib-fb-target/saveconfig.json"
BOOT_DROPIN = "/etc/systemd/system/rtslib-fb-targetctl.service.d/tarn-zfs.conf"
BOOT_DROPIN_TEXT = "[Unit]\nWants=zfs-volumes.target\nAfter=zfs-volumes.target\n"
CONFIGFS = "/sys/kernel/config/target/iscsi"
MAX_NAME = 223
MAX_LUNS = 256  # rtslib 2.1.75 maps LUN indexes 0-255
CHAP_MIN, CHAP_MAX = 12, 16
MAX_PORTALS = 16
DEFAULT_PORT = 3260
_IQN = re.compile(r"iqn\.[0-9]{4}-(0[1-9]|1[0-2])\.[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)+(:[a-z0-9.:-]*)?")  # fmt: skip
_EUI = re.compile(r"eui\.[0-9a-f]{16}")
_NAA = re.compile(r"naa\.[0-9a-f]{16}([0-9a-f]{16})?")
_USER = re.compile(r"[\x21-\x7e]{1,255}")
_SECRET = re.compile(r"[\x21-\x7e]+")
_ALIAS = re.compile(r"[A-Za-z0-9_.-]{1,64}")


class InvalidIscsi(InvalidField):
    """A name, secret or portal LIO (or Tarn) would refuse; field says which."""


def node_name(value: str, field: str = "iqn") -> str:
    """An iSCSI node name (a target's or an initiator's), lower-cased as LIO keeps it."""
    name = value.strip().lower()
    if not name:
        raise InvalidIscsi(field, "An iSCSI name is required (iqn.…, eui.… or naa.…)")
    if len(name.encode()) > MAX_NAME:
        raise InvalidIscsi(field, f"An iSCSI name is at most {MAX_NAME} bytes")
    if name.startswith("iqn."):
        if not _IQN.fullmatch(name):
            raise InvalidIscsi(
                field,
                "An IQN is iqn.YYYY-MM.reversed.domain[:name] (e.g. iqn.2026-11.lan.office:nas1): a month 01-12, a "
                "domain of at least two parts, then letters, digits, '.', '-' and ':' only",
            )
    elif name.startswith("eui."):
        if not _EUI.fullmatch(name):
            raise InvalidIscsi(field, "An EUI name is eui. and 16 hexadecimal digits")
    elif name.startswith("naa."):
        if not _NAA.fullmatch(name):
            raise InvalidIscsi(field, "An NAA name is naa. and 16 or 32 hexadecimal digits")
    else:
        raise InvalidIscsi(field, "An iSCSI name starts with iqn., eui. or naa.")
    return name


def chap_user(value: str, field: str) -> str:
    if not _USER.fullmatch(value):
        raise InvalidIscsi(field, "A CHAP user name is 1 to 255 printable characters without spaces")
    return value


def chap_secret(value: str, field: str) -> str:
    if not CHAP_MIN <= len(value) <= CHAP_MAX:
        raise InvalidIscsi(field, f"A CHAP secret is {CHAP_MIN} to {CHAP_MAX} characters (RFC 3720)")
    if not _SECRET.fullmatch(value):
        raise InvalidIscsi(field, "A CHAP secret is printable ASCII without spaces")
    return value


def port(value, field: str = "port") -> int:
    try:
        number = int(str(value).strip())
    except ValueError:
        raise InvalidIscsi(field, "A port is a number from 1 to 65535") from None
    if not 1 <= number <= 65535:
        raise InvalidIscsi(field, "A port is a number from 1 to 65535")
    return number


def address(value: str, field: str = "address") -> str:
    """A portal's address: an IPv4 or IPv6 address (0.0.0.0 or :: for all the host's); no IPv6 zone (%eth0)."""
    if "%" in value:
        raise InvalidIscsi(field, "A portal address has no zone (%…): give a global or unique-local IPv6 address")
    try:
        return str(ipaddress.ip_address(value.strip()))
    except ValueError:
        raise InvalidIscsi(field, "A portal address is an IPv4 or IPv6 address (0.0.0.0: all)") from None


def portal(value: str, field: str = "portals") -> tuple[str, int]:
    """One portal as an admin writes it: `address`, `address:port` or `[IPv6]:port` (3260 when no port is given)."""
    text = value.strip()
    where, number = text, DEFAULT_PORT
    if text.startswith("["):
        where, bracket, rest = text[1:].partition("]")
        if not bracket or (rest and not rest.startswith(":")):
            raise InvalidIscsi(field, f"{text}: an IPv6 portal is [address] or [address]:port")
        if rest:
            number = rest[1:]
    elif text.count(":") == 1:
        where, _, number = text.partition(":")
    return address(where, field), port(number, field)


def portal_text(where: str, number: int) -> str:
    return f"[{where}]:{number}" if ":" in where else f"{where}:{number}"


def portals(value, field: str = "portals") -> list[tuple[str, int]]:
    """A target's portals, from lines (or commas) of portal() or a list of them: one at least, MAX_PORTALS at most,
    none twice, and an address for all (0.0.0.0, ::) alone on its port: the kernel binds it to every address, so
    another portal on that port would fail to listen (EADDRINUSE)."""
    items = re.split(r"[\s,]+", value) if isinstance(value, str) else [str(v) for v in value]
    found = [portal(item, field) for item in items if item.strip()]
    if not found:
        raise InvalidIscsi(field, "A target has a portal at least (0.0.0.0:3260: every address, iSCSI's port)")
    if len(found) > MAX_PORTALS:
        raise InvalidIscsi(field, f"A target has at most {MAX_PORTALS} portals")
    seen = set()
    for where, number in found:
        if (where, number) in seen:
            raise InvalidIscsi(field, f"{portal_text(where, number)} is given twice")
        seen.add((where, number))
    for where, number in found:
        if ipaddress.ip_address(where).is_unspecified:
            others = [portal_text(a, p) for a, p in found if p == number and a != where]
            if others:
                raise InvalidIscsi(
                    field, f"{portal_text(where, number)} listens on every address: {others[0]} cannot be beside it"
                )
    return found


@dataclass(frozen=True)
class Acl:
    initiator: str
    chap_user: str = ""
    chap_secret: str = ""
    mutual_user: str = ""
    mutual_secret: str = ""


@dataclass(frozen=True)
class Lun:
    index: int
    zvol: str  # pool/…/volume
    serial: str  # the unit serial initiators know the disk by (kept for the LUN's life)
    write_back: bool = False
    read_only: bool = False

    @property
    def backstore(self) -> str:
        """The storage object's name, from the LUN's serial: unique (two zvols' names never fold into one) and short
        (a zvol's name may be 255 characters; configfs takes fewer)."""
        return "tarn-" + re.sub(r"[^A-Za-z0-9]", "", self.serial)[:32]


@dataclass(frozen=True)
class Target:
    iqn: str
    portals: list[tuple[str, int]] = field(default_factory=list)
    luns: list[Lun] = field(default_factory=list)
    acls: list[Acl] = field(default_factory=list)
    enabled: bool = True


def new_serial() -> str:
    return str(uuid.uuid4())


def check(targets: list[Target]) -> None:
    """What rtslib would skip (and the kernel refuse) caught before anything is written, each naming its field."""
    seen_targets, seen_zvols, seen_stores = set(), {}, set()
    for target in targets:
        node_name(target.iqn)
        if target.iqn in seen_targets:
            raise InvalidIscsi("iqn", f"Two targets are named {target.iqn}")
        seen_targets.add(target.iqn)
        if target.portals:
            portals([portal_text(a, p) for a, p in target.portals])
        indexes = set()
        for lun in target.luns:
            names.dataset_name(lun.zvol)
            if not 0 <= lun.index < MAX_LUNS or lun.index in indexes:
                raise InvalidIscsi("index", f"LUN {lun.index}: a LUN number is 0-{MAX_LUNS - 1}, once per target")
            indexes.add(lun.index)
            if lun.backstore in seen_stores:
                raise InvalidIscsi("serial", f"LUN {lun.index}: its serial is another LUN's")
            seen_stores.add(lun.backstore)
            if lun.zvol in seen_zvols:
                raise InvalidIscsi("zvol", f"{lun.zvol} is LUN {seen_zvols[lun.zvol]} already: a zvol is one LUN")
            seen_zvols[lun.zvol] = f"{lun.index} of {target.iqn}"
        with_chap = {bool(acl.chap_secret) for acl in target.acls}
        if len(with_chap) > 1:
            raise InvalidIscsi("chap_secret", "CHAP is for every initiator of a target or for none (LIO asks all)")
        initiators = set()
        for acl in target.acls:
            node_name(acl.initiator, "initiator")
            if acl.initiator in initiators:
                raise InvalidIscsi("initiator", f"{acl.initiator} is allowed once per target")
            initiators.add(acl.initiator)
            if acl.chap_user or acl.chap_secret:
                chap_user(acl.chap_user, "chap_user")
                chap_secret(acl.chap_secret, "chap_secret")
            if acl.mutual_user or acl.mutual_secret:
                if not acl.chap_user:
                    raise InvalidIscsi("mutual_user", "Mutual CHAP needs the initiator's CHAP first")
                chap_user(acl.mutual_user, "mutual_user")
                chap_secret(acl.mutual_secret, "mutual_secret")
                if acl.mutual_secret == acl.chap_secret:
                    raise InvalidIscsi("mutual_secret", "The target's secret must differ from the initiator's")


def render(targets: list[Target]) -> str:
    """rtslib's saveconfig.json for these targets: one block backstore per LUN (its zvol's /dev/zvol path, discard
    passed through: emulate_tpu), one portal group each, logins only by the ACLs (no demo mode), CHAP where an ACL
    has a secret."""
    check(targets)
    storage, rendered = [], []
    for target in targets:
        for lun in target.luns:
            storage.append(
                {
                    "plugin": "block",
                    "name": lun.backstore,
                    "dev": f"/dev/zvol/{lun.zvol}",
                    "wwn": lun.serial,
                    "readonly": lun.read_only,
                    "write_back": lun.write_back,
                    "attributes": {"emulate_tpu": 1, "emulate_write_cache": 1 if lun.write_back else 0},
                }
            )
        chap = any(acl.chap_secret for acl in target.acls)
        rendered.append(
            {
                "wwn": target.iqn,
                "fabric": "iscsi",
                "tpgs": [
                    {
                        "tag": 1,
                        "enable": target.enabled,
                        "attributes": {
                            "authentication": 1 if chap else 0,
                            "generate_node_acls": 0,
                            "demo_mode_write_protect": 1,
                            "cache_dynamic_acls": 0,
                        },
                        "parameters": {"AuthMethod": "CHAP" if chap else "CHAP,None"},
                        "portals": [
                            {"ip_address": f"[{a}]" if ":" in a else a, "port": p, "iser": False}
                            for a, p in target.portals
                        ],
                        "luns": [
                            {"index": lun.index, "storage_object": f"/backstores/block/{lun.backstore}"}
                            for lun in target.luns
                        ],
                        "node_acls": [_acl(acl, target.luns) for acl in target.acls],
                    }
                ],
            }
        )
    return json.dumps({"fabric_modules": [], "storage_objects": storage, "targets": rendered}, indent=2) + "\n"


def _acl(acl: Acl, luns: list[Lun]) -> dict:
    found = {
        "node_wwn": acl.initiator,
        "mapped_luns": [{"index": lun.index, "tpg_lun": lun.index, "write_protect": lun.read_only} for lun in luns],
    }
    if acl.chap_secret:
        found |= {"chap_userid": acl.chap_user, "chap_password": acl.chap_secret}
    if acl.mutual_secret:
        found |= {"chap_mutual_userid": acl.mutual_user, "chap_mutual_password": acl.mutual_secret}
    return found


@dataclass(frozen=True)
class Session:
    target: str
    initiator: str
    state: str  # LIO's TARG_SESS_STATE_… without the prefix: LOGGED_IN, FREE, …
    addresses: list[str] = field(default_factory=list)


def parse_session(target: str, initiator: str, info: str) -> Session | None:
    """One ACL's configfs `info`: None where no session is active."""
    if "No active iSCSI Session" in info:
        return None
    state, addresses = "", []
    for line in info.splitlines():
        line = line.strip()
        if line.startswith("Session State:"):
            state = line.split(":", 1)[1].strip().removeprefix("TARG_SESS_STATE_")
        elif line.startswith("Address "):  # a connection's, on the line after its CID
            addresses.append(line.split()[1])
    return Session(target, initiator, state or "UNKNOWN", addresses)


def apply(t: Transport, targets: list[Target]) -> bool:
    """The targets made live: the file written (root's alone) and restored by targetctl; where rtslib refuses or
    skips anything, the old file goes back and is restored, and ConfigRejected says what. True if it changed."""
    text = render(targets)
    _portals_here(t, targets)
    _zvols_here(t, targets)
    if t.write_file(BOOT_DROPIN, BOOT_DROPIN_TEXT):
        t.run(["systemctl", "daemon-reload"], mutating=True, timeout=60)
    old = current(t, CONFIG)
    if old == text:
        return False
    t.write_file(CONFIG, text, mode=0o600)
    problems = _restore(t)
    if problems:
        if old:
            t.write_file(CONFIG, old, mode=0o600)
        else:
            t.remove_file(CONFIG)
        _restore(t)
        raise ConfigRejected("targetctl", problems)
    return True


ZVOL_WAIT = 30.0  # seconds a zvol's device may take to appear (udev, after a pool import or a key load)


def _zvols_here(t: Transport, targets: list[Target], *, wait: float = ZVOL_WAIT) -> None:
    """Each LUN's zvol device there before LIO is asked for it (a restore would skip a missing one): a zvol just
    unlocked or imported appears when udev has made its link, a moment later; one still missing is refused."""
    wanted = [f"/dev/zvol/{lun.zvol}" for target in targets for lun in target.luns]
    deadline = time.monotonic() + wait
    while wanted:
        done = t.run(["stat", "-L", "-c", "%n", "--", *wanted], check=False, timeout=30)
        if done.returncode == 0:
            return
        present = set(done.stdout.splitlines())
        wanted = [path for path in wanted if path not in present]
        if wanted and time.monotonic() >= deadline:
            raise InvalidIscsi(
                "zvol", f"{wanted[0].removeprefix('/dev/zvol/')} has no device (is it a zvol, unlocked?)"
            )
        time.sleep(0.5)


def _portals_here(t: Transport, targets: list[Target]) -> None:
    """A portal on an address the host lacks would be skipped by rtslib (and the target unreachable): refused."""
    wanted = {a for target in targets for a, _ in target.portals if not ipaddress.ip_address(a).is_unspecified}
    if not wanted:
        return
    links = net.read_links(t, details=False)
    have = {str(ipaddress.ip_interface(a.cidr).ip) for link in links for a in link.addresses}
    missing = sorted(wanted - have)
    if missing:
        raise InvalidIscsi("portals", f"{missing[0]} is not an address of this host (0.0.0.0: all of them)")


def _restore(t: Transport) -> list[str]:
    """targetctl restore of CONFIG (a constant path: targetctl takes no `--`): what it refused or skipped, if any."""
    result = t.run(["targetctl", "restore", CONFIG], mutating=True, check=False, timeout=120)
    said = [line.strip() for line in (result.stdout + result.stderr).splitlines() if line.strip()]
    problems = [line for line in said if "skipped" in line or "rror" in line or "ailed" in line]
    if result.returncode != 0 and not problems:
        problems = [last_line(result.stderr) or f"exit status {result.returncode}"]
    return problems


def sessions(t: Transport) -> list[Session]:
    """The sessions logged in now, one per initiator ACL with one, read off configfs."""
    found = t.run(["find", CONFIGFS, "-mindepth", "5", "-maxdepth", "5", "-path", "*/acls/*/info"], check=False)
    paths = [p for p in found.stdout.splitlines() if p.startswith(CONFIGFS + "/")]
    out = []
    for path in paths:
        target, _tpg, _acls, initiator, _info = path[len(CONFIGFS) + 1 :].split("/")
        info = t.run(["cat", "--", path], check=False).stdout
        if (session := parse_session(target, initiator, info)) is not None:
            out.append(session)
    return out
