"""Tarn's own HTTPS certificate: made at first start (ECDSA P-256, self-signed, its names and addresses as SANs),
read back for the page and the banner (subject, SANs, issuer, validity, SHA-256 fingerprint). The TLS itself is
nginx's (hostlib.webfront); this module only makes and reads PEM with `cryptography`.

    DATA_DIR/tls/  root:tarn 0710   key.pem 0600 (nginx's master reads it as root), cert.pem 0640 (the web shows it),
                                    front.json 0640 (what is served: tls.State), nginx.conf 0640, nginx.pid
A certificate switched to later (imported, from ACME) is written as cert-<fingerprint>.pem and key-<…>.pem, and
front.json names it once nginx took it.
"""

import datetime
import ipaddress
import json
import os
import pwd
import re
import socket
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from django.conf import settings

from appliance import datadir
from hostlib import webfront
from hostlib.configfiles import ConfigRejected

FOLDER = "tls"
KEY, CERT = "key.pem", "cert.pem"
# Browsers refuse a server certificate valid for more than 398 days (CA/Browser Forum); a self-signed one is
# trusted by hand anyway, but an admin's browser would still say why, so stay within it.
LIFETIME = datetime.timedelta(days=397)


@dataclass(frozen=True)
class CertInfo:
    """What the admin is shown of a certificate."""

    subject: str
    issuer: str
    names: tuple[str, ...]  # the SANs: DNS names, then addresses
    not_before: datetime.datetime
    not_after: datetime.datetime
    fingerprint: str  # SHA-256 of the DER, as AB:CD:…
    self_signed: bool

    def days_left(self, now: datetime.datetime | None = None) -> int:
        return (self.not_after - (now or datetime.datetime.now(datetime.UTC))).days


def fingerprint(cert: x509.Certificate) -> str:
    return cert.fingerprint(hashes.SHA256()).hex(":").upper()


def describe(pem: bytes) -> CertInfo:
    """The first certificate in pem, read (ValueError if there is none)."""
    cert = x509.load_pem_x509_certificate(pem)
    try:
        sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        names = (*sans.get_values_for_type(x509.DNSName), *map(str, sans.get_values_for_type(x509.IPAddress)))
    except x509.ExtensionNotFound:
        names = ()
    return CertInfo(
        subject=cert.subject.rfc4514_string(),
        issuer=cert.issuer.rfc4514_string(),
        names=tuple(names),
        not_before=cert.not_valid_before_utc,
        not_after=cert.not_valid_after_utc,
        fingerprint=fingerprint(cert),
        self_signed=cert.issuer == cert.subject,
    )


def local_names() -> tuple[list[str], list[str]]:
    """This machine's names (its host name, the fully qualified one if it has one, localhost) and addresses
    (loopback and every address a local interface has), for a certificate that fits how the LAN reaches it."""
    names = []
    for name in (socket.gethostname(), socket.getfqdn(), "localhost"):
        if name and name not in names and dns_name(name):
            names.append(name)
    addresses = ["127.0.0.1", "::1"]
    for address in _interface_addresses():
        if address not in addresses:
            addresses.append(address)
    return names, addresses


LABEL = re.compile(r"[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?")


def dns_name(name: str) -> bool:
    """An ASCII DNS name a certificate may carry: labels of letters, digits and inner hyphens, 253 at most."""
    name = name.rstrip(".")
    return 0 < len(name) <= 253 and all(LABEL.fullmatch(label) for label in name.split("."))


def _interface_addresses() -> list[str]:
    """The addresses of this machine's interfaces (the host name's addresses, and the one a route to the LAN
    leaves from; nothing is sent)."""
    found = []
    try:
        found += [info[4][0] for info in socket.getaddrinfo(socket.gethostname(), None)]
    except OSError:
        pass
    for family, probe in ((socket.AF_INET, "192.0.2.1"), (socket.AF_INET6, "2001:db8::1")):
        try:
            with socket.socket(family, socket.SOCK_DGRAM) as s:
                s.connect((probe, 9))  # UDP: picks the source address a packet would leave from, sends nothing
                found.append(s.getsockname()[0])
        except OSError:
            pass
    out = []
    for address in found:
        try:
            ip = ipaddress.ip_address(address.split("%")[0])
        except ValueError:
            continue
        if not ip.is_link_local and not ip.is_unspecified:
            out.append(str(ip))
    return out


def self_signed(names: list[str], addresses: list[str], *, now: datetime.datetime | None = None) -> tuple[bytes, bytes]:
    """A new ECDSA P-256 key and a self-signed certificate for names and addresses: (cert PEM, key PEM)."""
    if not names:
        raise ValueError("a certificate needs at least one name")
    now = now or datetime.datetime.now(datetime.UTC)
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name(
        [x509.NameAttribute(NameOID.COMMON_NAME, names[0]), x509.NameAttribute(NameOID.ORGANIZATION_NAME, "Tarn")]
    )
    sans = [x509.DNSName(n) for n in names] + [x509.IPAddress(ipaddress.ip_address(a)) for a in addresses]
    public = key.public_key()
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(public)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))  # a client whose clock is a little behind
        .not_valid_after(now + LIFETIME)
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=False,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(public), critical=False)
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return cert.public_bytes(serialization.Encoding.PEM), key_pem


def folder() -> Path:
    """The data dir's tls/ (checked when it exists)."""
    return datadir.key_folder(FOLDER)


@dataclass(frozen=True)
class State:
    """What the front serves, kept in tls/front.json (root writes it; the web reads it to show the page): the
    certificate and key files (in tls/), whether HSTS is sent (the admin said the certificate is trusted), and the
    user the front's workers run as."""

    cert: str = CERT
    key: str = KEY
    hsts: bool = False
    user: str = ""


STATE = "front.json"
_FILE_NAME = re.compile(r"(cert|key)(-[0-9a-f]{16})?\.pem")


def state() -> State:
    try:
        raw = json.loads(datadir.key_file(folder() / STATE, private=False).read_text())
    except FileNotFoundError:
        return State()
    found = State(
        cert=str(raw.get("cert", CERT)),
        key=str(raw.get("key", KEY)),
        hsts=raw.get("hsts") is True,
        user=str(raw.get("user", "")),
    )
    if not (_FILE_NAME.fullmatch(found.cert) and _FILE_NAME.fullmatch(found.key)):
        raise datadir.LayoutError(f"Refused: {folder() / STATE} names files Tarn does not make; {datadir.FIX}.")
    return found


def paths() -> tuple[Path, Path]:
    """(cert, key) the front serves, in tls/."""
    current_state, base = state(), folder()
    return base / current_state.cert, base / current_state.key


def current() -> CertInfo | None:
    """The certificate in use, or None before the first start made one."""
    cert, _ = paths()
    try:
        return describe(datadir.key_file(cert, private=False).read_bytes())
    except FileNotFoundError:
        return None


def current_chain() -> bytes:
    """The PEM the front serves (the certificate, then its intermediates)."""
    return datadir.key_file(paths()[0], private=False).read_bytes()


def ensure_certificate() -> tuple[CertInfo, bool]:
    """The certificate in use, made (with its key) if there is none yet: (its description, made now). Run as root
    by `make run` before the web starts."""
    base = folder()
    if not base.exists():
        base.mkdir(mode=datadir.KEY_FOLDERS[FOLDER])
        os.chmod(base, datadir.KEY_FOLDERS[FOLDER])  # whatever the umask
    datadir.check(base, folder=True)
    cert, key = paths()
    if cert.exists() and key.exists():
        datadir.key_file(key)
        return describe(datadir.key_file(cert, private=False).read_bytes()), False
    cert_pem, key_pem = self_signed(*local_names())
    datadir.write_file(base / KEY, key_pem, 0o600)
    datadir.write_file(base / CERT, cert_pem, 0o640)
    _save(State(user=state().user, hsts=False))  # a new self-signed certificate is trusted by no one yet
    return describe(cert_pem), True


def _save(new: State) -> None:
    datadir.write_file(folder() / STATE, (json.dumps(asdict(new), indent=1) + "\n").encode(), 0o640)


def front(s: State | None = None) -> webfront.Front:
    """The HTTPS front's settings: its ports (TARN_HTTPS_PORT, TARN_HTTP_PORT), the certificate in s (the state in
    use by default), the web's socket."""
    s = s or state()
    base = folder()
    return webfront.Front(
        https_port=settings.TARN_HTTPS_PORT,
        http_port=settings.TARN_HTTP_PORT,
        cert=str(base / s.cert),
        key=str(base / s.key),
        upstream=str(web_socket()),
        pid_file=str(base / "nginx.pid"),
        # front/ (root's, the workers' group): nginx, started as root, makes its temporary folders there and gives
        # them to its workers' user; in a folder the web's user may write, that user could plant a link where one is
        # made and have root hand it whatever the link points to.
        temp_dir=str(settings.DATA_DIR / datadir.FRONT),
        user=s.user,
        hsts=s.hsts,
        listen=("0.0.0.0", "[::]") if _ipv6() else ("0.0.0.0",),
        challenges=str(challenge_folder()),
    )


def _ipv6() -> bool:
    """Does this kernel do IPv6 (else nginx cannot listen on [::] and would not start)?"""
    return socket.has_ipv6 and os.path.exists("/proc/net/if_inet6")


def web_socket() -> Path:
    """The Unix socket the web (gunicorn) listens on and the front sends to: in sock/, shared by the two only."""
    return settings.DATA_DIR / datadir.SOCK / "web.sock"


def front_conf() -> Path:
    return folder() / "nginx.conf"


def _install(s: State, *, reload: bool = True) -> bool:
    """The front's configuration for s, written once nginx accepted it (and nginx reloaded if it runs); then s is
    the state. nginx refusing it (ConfigRejected) leaves the configuration, the state and the running front as
    they were."""
    f = front(s)
    if f.user:
        try:
            pwd.getpwnam(f.user)
        except KeyError:
            raise datadir.LayoutError(
                f"There is no user {f.user} (the HTTPS front's workers'): scripts/web.sh prepare makes it."
            ) from None
    temp = Path(f.temp_dir)
    if not temp.exists():
        temp.mkdir(mode=0o750)
        os.chmod(temp, 0o750)
    datadir.check(temp, folder=True)
    changed = webfront.install(str(front_conf()), webfront.render(f), reload=False)
    _save(s)  # the configuration names s's files from here on, whatever the reload does
    if reload:
        webfront.reload_running(str(front_conf()))
    return changed


def front_install(*, user: str = "", reload: bool = True) -> bool:
    """At start (manage.py tarn_front): the configuration for the state kept, with the workers' user given."""
    return _install(replace(state(), user=user), reload=reload)


def trust_set(trusted: bool) -> bool:
    """HSTS on (the admin said the browsers trust the certificate) or off; the front reloaded."""
    return _install(replace(state(), hsts=trusted))


def switch(cert_pem: bytes, key_pem: bytes, *, keep_hsts: bool = False) -> CertInfo:
    """Serve this certificate (its chain after it) and key from now on: written beside the one in use under new
    names, the front's configuration pointing at them accepted by nginx and reloaded, then the files no longer
    served removed. If nginx refuses, the new files go and the old certificate stays live (ConfigRejected).
    HSTS goes off unless keep_hsts (the new chain ends at a CA this machine trusts, so browsers do too): a browser
    told to insist on HTTPS refuses, with no way past, a certificate it does not trust."""
    info = describe(cert_pem)
    tag = info.fingerprint.replace(":", "").lower()[:16]
    base, before = folder(), state()
    new = replace(before, cert=f"cert-{tag}.pem", key=f"key-{tag}.pem", hsts=before.hsts and keep_hsts)
    if (new.cert, new.key) == (before.cert, before.key):
        return info
    datadir.write_file(base / new.key, key_pem, 0o600)
    datadir.write_file(base / new.cert, cert_pem, 0o640)
    try:
        _install(new)
    except ConfigRejected:  # refused before anything was written: the new files go, the old ones stay named
        for name in (new.cert, new.key):
            (base / name).unlink(missing_ok=True)
        raise
    for name in (before.cert, before.key):
        (base / name).unlink(missing_ok=True)
    return info


# --- a certificate signing request: the key made here (root), the request handed to a CA -------------------------

REQUEST_KEY, REQUEST = "request-key.pem", "request.csr"


def new_key() -> tuple[ec.EllipticCurvePrivateKey, bytes]:
    """A new ECDSA P-256 key, and its PEM (PKCS#8, unencrypted: nginx reads it at start)."""
    key = ec.generate_private_key(ec.SECP256R1())
    return key, key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def csr(key: ec.EllipticCurvePrivateKey, names: list[str], addresses: list[str]) -> bytes:
    """A certificate signing request (PEM) for names and addresses, signed with key; the first is its CN."""
    if not names and not addresses:
        raise ValueError("a request needs at least one name")
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, (names or addresses)[0])])
    sans = [x509.DNSName(n) for n in names] + [x509.IPAddress(ipaddress.ip_address(a)) for a in addresses]
    request = (
        x509.CertificateSigningRequestBuilder()
        .subject_name(subject)
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(key, hashes.SHA256())
    )
    return request.public_bytes(serialization.Encoding.PEM)


def request_make(names: list[str], addresses: list[str]) -> bytes:
    """A new ECDSA P-256 key (kept in tls/, 0600, for the certificate the CA will send back) and a request for these
    names and addresses (tls/request.csr, which the page offers). Replaces an earlier request. Run as root."""
    key, key_pem = new_key()
    pem = csr(key, names, addresses)
    base = folder()
    datadir.write_file(base / REQUEST_KEY, key_pem, 0o600)
    datadir.write_file(base / REQUEST, pem, 0o640)
    return pem


def request_pem() -> bytes | None:
    """The pending request (the web reads it to offer it), or None."""
    try:
        return datadir.key_file(folder() / REQUEST, private=False).read_bytes()
    except FileNotFoundError:
        return None


def request_key() -> bytes:
    """The pending request's key (root only)."""
    return datadir.key_file(folder() / REQUEST_KEY).read_bytes()


def request_clear() -> None:
    for name in (REQUEST, REQUEST_KEY):
        (folder() / name).unlink(missing_ok=True)


# --- ACME: the account's key, and the HTTP-01 answers the front serves on its HTTP port ----------------------------

ACME_ACCOUNT_KEY = "acme-account.pem"
CHALLENGES = "acme"  # in front/ (root's, the front's workers' group): they read the answers, only root writes them


def acme_account_key() -> bytes:
    """The ACME account's key (tls/acme-account.pem, 0600, root's), made the first time (P-256). One key for every
    directory: an account is the key, each CA knows it by its own URL."""
    path = folder() / ACME_ACCOUNT_KEY
    try:
        return datadir.key_file(path).read_bytes()
    except FileNotFoundError:
        _, pem = new_key()
        datadir.write_file(path, pem, 0o600)
        return pem


def challenge_folder() -> Path:
    return settings.DATA_DIR / datadir.FRONT / CHALLENGES


def challenge_put(token: str, answer: str) -> None:
    """An HTTP-01 answer (the key authorization) at /.well-known/acme-challenge/<token> on the front's HTTP port.
    The token comes from the CA: only a base64url name of webfront's pattern becomes a file."""
    if not re.fullmatch(webfront.TOKEN, token) or not re.fullmatch(r"[A-Za-z0-9_.-]{1,300}", answer):
        raise ValueError("the CA's challenge token is not base64url")
    base = challenge_folder()
    front_dir = base.parent
    datadir.check(front_dir, folder=True)
    if not base.exists():
        base.mkdir(mode=0o750)
        os.chown(base, -1, front_dir.stat().st_gid)
        os.chmod(base, 0o750)
    datadir.check(base, folder=True)
    datadir.write_file(base / token, answer.encode("ascii"), 0o640)


def challenges_clear() -> None:
    """Every answer gone (once the order is done, whatever its end)."""
    base = challenge_folder()
    if base.is_dir() and not base.is_symlink():
        for path in base.iterdir():
            if re.fullmatch(webfront.TOKEN, path.name) or path.name.startswith("."):
                path.unlink(missing_ok=True)
