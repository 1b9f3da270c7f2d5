"""A small PKI for the certificate tests, made with `cryptography`: a root CA, an intermediate, server certificates."""

import datetime
import ipaddress

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

USAGES = (
    "digital_signature",
    "content_commitment",
    "key_encipherment",
    "data_encipherment",
    "key_agreement",
    "key_cert_sign",
    "crl_sign",
    "encipher_only",
    "decipher_only",
)

NOW = datetime.datetime(2026, 11, 29, 12, 0, tzinfo=datetime.UTC)
DAY = datetime.timedelta(days=1)


def pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def key_pem(key, password: bytes | None = None) -> bytes:
    encryption = serialization.BestAvailableEncryption(password) if password else serialization.NoEncryption()
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption)


def make(
    subject: str,
    *,
    issuer=None,
    key=None,
    ca: bool = False,
    dns=(),
    ips=(),
    start=NOW - 30 * DAY,
    end=NOW + 60 * DAY,
    eku=None,
):
    """(certificate, key): signed by issuer (a (certificate, key) pair), or self-signed."""
    key = key or ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)])
    issuer_cert, issuer_key = issuer if issuer else (None, key)
    builder = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(issuer_cert.subject if issuer_cert else name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    sans = [x509.DNSName(d) for d in dns] + [x509.IPAddress(ipaddress.ip_address(i)) for i in ips]
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    builder = builder.add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
    if issuer_cert is not None:
        aki = x509.AuthorityKeyIdentifier.from_issuer_public_key(issuer_key.public_key())
        builder = builder.add_extension(aki, critical=False)
    usage = dict.fromkeys(USAGES, False) | (
        {"key_cert_sign": True, "crl_sign": True} if ca else {"digital_signature": True}
    )
    builder = builder.add_extension(x509.KeyUsage(**usage), critical=True)
    if eku is not None:
        builder = builder.add_extension(x509.ExtendedKeyUsage(eku), critical=False)
    elif not ca:
        builder = builder.add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
    return builder.sign(issuer_key, hashes.SHA256()), key


class Pki:
    """root → intermediate → server (nas.example.org, *.lan.example.org, 192.0.2.10)."""

    def __init__(self, now: datetime.datetime = NOW):
        """Valid from 30 days before now; the server's certificate for 60 days after it."""
        start = now - 30 * DAY
        self.root = make("Test Root CA", ca=True, start=start, end=now + 3650 * DAY)
        self.intermediate = make("Test Intermediate", issuer=self.root, ca=True, start=start, end=now + 1000 * DAY)
        self.server = make(
            "nas.example.org",
            issuer=self.intermediate,
            dns=["nas.example.org", "*.lan.example.org"],
            ips=["192.0.2.10"],
            start=start,
            end=now + 60 * DAY,
        )

    def chain(self, *certs) -> bytes:
        return b"".join(pem(c) for c in certs)

    @property
    def full(self) -> bytes:
        return self.chain(self.server[0], self.intermediate[0], self.root[0])

    @property
    def key(self) -> bytes:
        return key_pem(self.server[1])


def rsa_key(bits: int):
    return rsa.generate_private_key(public_exponent=65537, key_size=bits)
