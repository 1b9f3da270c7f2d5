"""The rules for a certificate the front may serve (imported, or sent by an ACME CA): its chain, its key, its name,
checked with `cryptography` before anything is queued, and again by the worker."""

import datetime
import ipaddress
import re
import warnings
from dataclasses import dataclass
from functools import cache

from cryptography import x509
from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.utils import CryptographyDeprecationWarning
from cryptography.x509.oid import ExtendedKeyUsageOID
from cryptography.x509.verification import PolicyBuilder, Store, VerificationError
from django.core.exceptions import ValidationError

from appliance import tls
from certificates.choices import CHAIN_MAX, PEM_MAX, SYSTEM_CAS

BEGIN = re.compile(rb"-----BEGIN ([A-Z0-9 ]{1,40})-----")
KEY_LABELS = (b"PRIVATE KEY", b"EC PRIVATE KEY", b"RSA PRIVATE KEY")
EC_CURVES = ("secp256r1", "secp384r1")  # what browsers take (P-256, P-384)


def _blocks(data: bytes, field: str) -> list[tuple[bytes, bytes]]:
    """The PEM blocks in data, as (label, whole block), read line by line (linear in the input); refused (naming
    field) when anything but blank lines lies outside them: a file with text around its blocks was cut or joined
    wrong, so Tarn does not guess."""
    if len(data) > PEM_MAX:
        raise ValidationError(
            {field: f"{len(data) >> 10} KiB: a certificate chain or key in PEM is at most {PEM_MAX >> 10} KiB."}
        )
    data = data.removeprefix(b"\xef\xbb\xbf")  # a BOM some editors write
    found: list[tuple[bytes, bytes]] = []
    label, lines = b"", []
    for raw in data.split(b"\n"):
        line = raw.strip()
        if not lines:
            if not line:
                continue
            begin = BEGIN.fullmatch(line)
            if begin is None:
                raise ValidationError({field: "There is text outside the PEM blocks (-----BEGIN … -----END …)."})
            label, lines = begin.group(1), [line]
            continue
        lines.append(line)
        if line.startswith(b"-----END "):
            if line != b"-----END " + label + b"-----":
                raise ValidationError(
                    {field: f"A {label.decode()} block ends as another one ({line.decode(errors='replace')[:60]})."}
                )
            found.append((label, b"\n".join(lines) + b"\n"))
            label, lines = b"", []
        elif line.startswith(b"-----"):
            raise ValidationError({field: f"A {label.decode()} block is not closed before the next one begins."})
    if lines:
        raise ValidationError({field: f"The {label.decode()} block has no END line (cut short?)."})
    if not found:
        raise ValidationError({field: "No PEM block (-----BEGIN …-----) in it."})
    return found


def _names(cert: x509.Certificate) -> tuple[list[str], list[str]]:
    try:
        sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return [], []
    return sans.get_values_for_type(x509.DNSName), [str(a) for a in sans.get_values_for_type(x509.IPAddress)]


def covers(cert: x509.Certificate, name: str) -> bool:
    """Does the certificate's SAN name this host name or address (a wildcard covering one leftmost label)? The
    subject's CN is not looked at: browsers stopped reading it."""
    dns, addresses = _names(cert)
    try:
        return str(ipaddress.ip_address(name)) in addresses
    except ValueError:
        pass
    name = name.lower().rstrip(".")
    for pattern in (d.lower().rstrip(".") for d in dns):
        if pattern == name:
            return True
        if (
            pattern.startswith("*.")
            and "." in name
            and name.split(".", 1)[1] == pattern[2:]
            and pattern.count(".") >= 2
        ):
            return True
    return False


@cache
def _system_cas() -> dict[bytes, list[x509.Certificate]]:
    """The trusted CAs of this machine (Debian's ca-certificates), by subject."""
    by_subject: dict[bytes, list[x509.Certificate]] = {}
    try:
        with open(SYSTEM_CAS, "rb") as f, warnings.catch_warnings():
            warnings.simplefilter("ignore", CryptographyDeprecationWarning)  # an old root's serial; it is not used
            for cert in x509.load_pem_x509_certificates(f.read()):
                by_subject.setdefault(cert.subject.public_bytes(), []).append(cert)
    except (OSError, ValueError):
        pass
    return by_subject


def _certificate(block: bytes, i: int) -> x509.Certificate:
    """One certificate, read whole now (its extensions and key are parsed lazily: a damaged one would fail later,
    past the checks)."""
    which = "The certificate" if i == 0 else f"Certificate {i + 1} of the chain"
    try:
        cert = x509.load_pem_x509_certificate(block)
        cert.extensions  # noqa: B018 - parsed here, so a malformed extension is refused here
        cert.public_key()
    except (ValueError, UnsupportedAlgorithm, x509.DuplicateExtension) as exc:
        raise ValidationError({"certificate": f"{which} cannot be read (cut or damaged?): {str(exc)[:120]}"}) from None
    return cert


def _issued_by(cert: x509.Certificate, issuer: x509.Certificate) -> bool:
    try:
        cert.verify_directly_issued_by(issuer)
        return True
    except (ValueError, TypeError, InvalidSignature, UnsupportedAlgorithm):
        return False


def when_said(moment: datetime.datetime) -> str:
    return f"{moment:%Y-%m-%d %H:%M} UTC"


def _spki(public) -> bytes:
    return public.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)


def _private_key(private_key: bytes):
    """One unencrypted RSA (>= 2048) or P-256/P-384 key from the PEM given, or a refusal naming the field."""
    keys = [k for k in _blocks(private_key, "private_key") if k[0] != b"EC PARAMETERS"]  # openssl ecparam -genkey
    if len(keys) != 1:
        raise ValidationError({"private_key": f"{len(keys)} PEM blocks: give exactly one private key."})
    label, block = keys[0]
    if label == b"ENCRYPTED PRIVATE KEY" or b"Proc-Type: 4,ENCRYPTED" in block:
        raise ValidationError(
            {
                "private_key": "The key is protected by a passphrase: nginx cannot open it on its own. "
                "Remove it (openssl pkey -in key.pem -out plain.pem) and give that."
            }
        )
    if label not in KEY_LABELS:
        raise ValidationError({"private_key": f"A {label.decode()} block, not a private key."})
    try:
        key = serialization.load_pem_private_key(block, password=None)
    except (ValueError, TypeError, UnsupportedAlgorithm):
        raise ValidationError({"private_key": "Not a private key Tarn can read (cut or damaged?)."}) from None
    if isinstance(key, rsa.RSAPrivateKey) and key.key_size < 2048:
        raise ValidationError({"private_key": f"An RSA key of {key.key_size} bits: at least 2048."})
    if not isinstance(key, rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey) or (
        isinstance(key, ec.EllipticCurvePrivateKey) and key.curve.name not in EC_CURVES
    ):
        raise ValidationError(
            {"private_key": "An RSA (2048 bits or more) or ECDSA (P-256, P-384) key: what browsers take."}
        )
    return key


def certificate_check(
    *,
    certificate: bytes,
    private_key: bytes,
    name: str,
    now: datetime.datetime | None = None,
    request: x509.CertificateSigningRequest | None = None,
    roots: tuple[x509.Certificate, ...] = (),
    anchored: bool = False,
) -> "Checked":
    """The rules for a certificate to serve, every one with the field it concerns: the chain (the server's
    certificate first, then each one that signed the one before) is certificates only, each in date, each signed
    by the next, ending at a CA this machine trusts or at a root given with it; the key is one unencrypted private
    key, of the server's certificate (or none, for the certificate a CA sent back for the request made here: its
    public key must be the request's); its SAN covers the name browsers will use. Returns what the page will show."""
    now = now or datetime.datetime.now(datetime.UTC)
    host_name(name)  # the name's shape first: a bad one is said even when the PEM is wrong too
    blocks = _blocks(certificate, "certificate")
    if [label for label, _ in blocks if label in KEY_LABELS or label.endswith(b"PRIVATE KEY")]:
        raise ValidationError({"certificate": "It holds a private key: give the key in its own field."})
    if [label for label, _ in blocks if label != b"CERTIFICATE"]:
        raise ValidationError({"certificate": "Only CERTIFICATE blocks: the server's certificate, then its chain."})
    if len(blocks) > CHAIN_MAX:
        raise ValidationError({"certificate": f"{len(blocks)} certificates: a chain has at most {CHAIN_MAX}."})
    chain = [_certificate(block, i) for i, (_, block) in enumerate(blocks)]
    if anchored and len(chain) > 1 and chain[-1].issuer == chain[-1].subject:
        chain.pop()  # a CA's own root, sent along: trusted only if Debian or the admin trusts it (below)

    leaf = chain[0]
    if private_key.strip() or request is None:
        key = _private_key(private_key) if private_key.strip() else None
        if key is None:
            raise ValidationError(
                {
                    "private_key": "Paste the key or choose its file (or make a request on this page, whose key Tarn keeps)."
                }
            )
        public = key.public_key()
        key_said = "This key is not the certificate's: its public half differs."
    else:  # the certificate a CA sent back for the request made here: its key is the request's
        public = request.public_key()
        key_said = "This certificate is not for the request made here (another key): give its own key."
    if _spki(leaf.public_key()) != _spki(public):
        raise ValidationError({"private_key": key_said})

    for i, cert in enumerate(chain):
        which = "The certificate" if i == 0 else f"Certificate {i + 1} of the chain ({cert.subject.rfc4514_string()})"
        if cert.not_valid_after_utc < now:
            raise ValidationError({"certificate": f"{which} expired on {when_said(cert.not_valid_after_utc)}."})
        if cert.not_valid_before_utc > now:
            raise ValidationError(
                {"certificate": f"{which} is not valid until {when_said(cert.not_valid_before_utc)}."}
            )
    for cert, issuer in zip(chain, chain[1:], strict=False):
        if not _issued_by(cert, issuer):
            raise ValidationError(
                {
                    "certificate": f"The chain is out of order or broken: {issuer.subject.rfc4514_string()} "
                    f"did not sign {cert.subject.rfc4514_string()}. Give the server's certificate first, "
                    "then each one that signed the one before."
                }
            )
    last = chain[-1]
    given_root = last.issuer == last.subject and _issued_by(last, last)
    if given_root and anchored:
        raise ValidationError({"certificate": "The CA sent a certificate that signed itself: refused."})
    system_anchors = (
        [] if given_root else [ca for ca in _system_cas().get(last.issuer.public_bytes(), []) if _issued_by(last, ca)]
    )
    own_anchors = [] if given_root else [ca for ca in roots if ca.subject == last.issuer and _issued_by(last, ca)]
    if not given_root and not system_anchors and not own_anchors:
        raise ValidationError(
            {
                "certificate": f"The chain is incomplete: the certificate of "
                f"{last.issuer.rfc4514_string()}, which signed {last.subject.rfc4514_string()}, is "
                "missing (add the intermediate certificate your CA gave you after this one)."
            }
        )

    name = host_name(name)
    if not covers(leaf, name):
        dns, addresses = _names(leaf)
        raise ValidationError(
            {"name": f"The certificate is not for {name}: it names {', '.join(dns + addresses) or 'nothing (no SAN)'}."}
        )
    _browsers_accept(chain, name, anchors=[last] if given_root else system_anchors + own_anchors, now=now)
    return Checked(tls.describe(certificate), public=bool(system_anchors))


@dataclass(frozen=True)
class Checked:
    """A certificate that passed: what the page shows, and whether it chains to a CA this machine trusts (public:
    browsers trust it without being told; HSTS may stay on when it replaces the one in use)."""

    info: tls.CertInfo
    public: bool


def host_name(name: str) -> str:
    """The name browsers will use: an IP address, or a DNS name (an internationalised one in its xn-- form)."""
    name = (name or "").strip().rstrip(".")
    if not name:
        raise ValidationError({"name": "Give the name (or address) browsers use to reach Tarn."})
    try:
        return str(ipaddress.ip_address(name.strip("[]")))
    except ValueError:
        pass
    try:
        ascii_name = name.encode("idna").decode("ascii").lower()
    except UnicodeError:
        ascii_name = ""
    if not tls.dns_name(ascii_name):
        raise ValidationError({"name": "A host name (letters, digits, hyphens, dots) or an IP address."})
    return ascii_name


def _browsers_accept(chain: list[x509.Certificate], name: str, *, anchors, now) -> None:
    """The rules browsers apply past signatures and dates (cryptography's verifier: RFC 5280 and the CA/Browser
    Forum's profile): issuers are CAs allowed to sign, the server's certificate is not a CA and may serve TLS, the name
    matches. A self-signed server certificate (its own anchor) is looked at by hand: verifiers take only CAs as
    anchors."""
    leaf = chain[0]
    if len(chain) == 1 and leaf.issuer == leaf.subject:
        try:
            ca = leaf.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
        except x509.ExtensionNotFound:
            ca = False
        try:
            usages = list(leaf.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value)
        except x509.ExtensionNotFound:
            usages = [ExtendedKeyUsageOID.SERVER_AUTH]
        if ca:
            raise ValidationError({"certificate": "It is a CA's certificate (CA:TRUE), not a server's."})
        if ExtendedKeyUsageOID.SERVER_AUTH not in usages:
            raise ValidationError({"certificate": "Its extended key usage does not allow a TLS server (serverAuth)."})
        return
    try:
        subject = x509.IPAddress(ipaddress.ip_address(name))
    except ValueError:
        subject = x509.DNSName(name)
    verifier = PolicyBuilder().store(Store(anchors)).time(now).build_server_verifier(subject)
    try:
        verifier.verify(leaf, chain[1:])
    except VerificationError as exc:
        raise ValidationError({"certificate": f"Browsers would refuse this chain: {str(exc)[:300]}"}) from None


def roots_read(text: str) -> tuple[x509.Certificate, ...]:
    """A private CA's certificates (PEM, for ACME from an office's CA): CA certificates only (CA:TRUE), which TLS to
    its directory and the chains it issues may end at."""
    if not (text or "").strip():
        return ()
    if not text.isascii():
        raise ValidationError({"roots": "PEM is ASCII text: this is not PEM."})
    blocks = _blocks(text.encode("ascii"), "roots")
    if [label for label, _ in blocks if label != b"CERTIFICATE"]:
        raise ValidationError({"roots": "Only CERTIFICATE blocks: the CA's certificates, never a key."})
    if len(blocks) > CHAIN_MAX:
        raise ValidationError({"roots": f"{len(blocks)} certificates: at most {CHAIN_MAX}."})
    found = []
    for i, (_, block) in enumerate(blocks):
        try:
            cert = _certificate(block, i)
        except ValidationError:
            raise ValidationError({"roots": f"Certificate {i + 1} cannot be read (cut or damaged?)."}) from None
        try:
            ca = cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
        except x509.ExtensionNotFound:
            ca = False
        if not ca:
            subject = cert.subject.rfc4514_string()[:100]
            raise ValidationError({"roots": f"Certificate {i + 1} ({subject}) is not a CA's (CA:TRUE)."})
        found.append(cert)
    return tuple(found)
