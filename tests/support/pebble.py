"""A real ACME CA on this machine: Let's Encrypt's pebble (built by scripts/setup.sh from the Go module proxy) and its
DNS server pebble-challtestsrv, which answers every name with 127.0.0.1, so pebble's HTTP-01 checks reach the
front under test on its HTTP port. Its directory's HTTPS uses a certificate from a CA made here; its issuing root is
random per start and read from its management port. Both together are the "private CA's certificates" an admin
would give Tarn."""

import datetime
import ipaddress
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests.conftest import require
from tests.support.front import free_port

VERSION = "v2.10.3"
BIN = Path(os.environ.get("TARN_PEBBLE_DIR", f"/usr/local/lib/tarn-test/pebble-{VERSION}"))
BLOCKED = "blocked.lab.test"  # pebble refuses to issue for it (its domainBlocklist)


def _pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def listener_pki(folder: Path) -> bytes:
    """A CA and, signed by it, a certificate for 127.0.0.1 and localhost (pebble's HTTPS): the CA's PEM."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Tarn test: pebble's HTTPS CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=False,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )

    leaf = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    (folder / "cert.pem").write_bytes(_pem(leaf))
    (folder / "key.pem").write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return _pem(ca)


def _wait_port(port: int, process: subprocess.Popen, what: str) -> None:

    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            assert process.poll() is None, f"{what} exited: {process.returncode}"
            assert time.monotonic() < deadline, f"{what} does not listen on {port}"
            time.sleep(0.1)


@contextmanager
def running_pebble(folder: Path, *, http_port: int, validity_days: int = 90):
    """Yields {"directory", "roots" (PEM: the listener's CA and the issuing root), "dns" (challtestsrv's
    management URL)}. http_port: where pebble's HTTP-01 checks connect (the front's HTTP port)."""
    for tool in ("pebble", "pebble-challtestsrv"):
        require((BIN / tool).exists(), f"{BIN / tool} is missing (scripts/setup.sh test builds it)")
    folder.mkdir(parents=True, exist_ok=True)
    listener_ca = listener_pki(folder)
    port, management, dns, dns_management = free_port(), free_port(), free_port(), free_port()
    config = {
        "pebble": {
            "listenAddress": f"127.0.0.1:{port}",
            "managementListenAddress": f"127.0.0.1:{management}",
            "certificate": str(folder / "cert.pem"),
            "privateKey": str(folder / "key.pem"),
            "httpPort": http_port,
            "tlsPort": free_port(),
            "ocspResponderURL": "",
            "externalAccountBindingRequired": False,
            "domainBlocklist": [BLOCKED],
            "retryAfter": {"authz": 1, "order": 1},
            "keyAlgorithm": "ecdsa",
            "profiles": {"default": {"description": "Tarn's tests", "validityPeriod": validity_days * 86400}},
        }
    }
    (folder / "pebble.json").write_text(json.dumps(config))
    env = {
        **os.environ,
        "PEBBLE_VA_NOSLEEP": "1",  # no random wait before each check
        "PEBBLE_WFE_NONCEREJECT": "0",  # no nonce refused at random
        "PEBBLE_AUTHZREUSE": "0",  # each order proves its names again, as a renewal at day 60 does at Let's Encrypt
    }
    logs = (folder / "challtestsrv.log").open("wb"), (folder / "pebble.log").open("wb")
    challtestsrv = subprocess.Popen(
        [
            str(BIN / "pebble-challtestsrv"),
            "-defaultIPv4", "127.0.0.1", "-defaultIPv6", "",
            "-dnsserver", f"127.0.0.1:{dns}", "-management", f"127.0.0.1:{dns_management}",
            "-http01", "", "-https01", "", "-tlsalpn01", "", "-doh", "",
        ],
        stdout=logs[0], stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    pebble = subprocess.Popen(
        [str(BIN / "pebble"), "-config", str(folder / "pebble.json"), "-dnsserver", f"127.0.0.1:{dns}"],
        env=env, stdout=logs[1], stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    try:
        _wait_port(dns_management, challtestsrv, "pebble-challtestsrv")
        _wait_port(management, pebble, "pebble")
        _wait_port(port, pebble, "pebble")
        context = ssl.create_default_context(cadata=listener_ca.decode())
        root = urllib.request.urlopen(f"https://127.0.0.1:{management}/roots/0", context=context, timeout=10).read()
        yield {
            "directory": f"https://127.0.0.1:{port}/dir",
            "roots": (listener_ca + root).decode(),
            "dns": f"http://127.0.0.1:{dns_management}",
            "log": folder / "pebble.log",
        }
    finally:
        for process in (pebble, challtestsrv):
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=30)
        for log in logs:
            log.close()
        shutil.rmtree(folder, ignore_errors=True)


def dns_servfail(dns: str, host: str) -> None:
    """challtestsrv answers SERVFAIL for host from now on: the CA cannot find where to check it."""
    request = urllib.request.Request(f"{dns}/set-servfail", data=json.dumps({"host": host}).encode(), method="POST")
    urllib.request.urlopen(request, timeout=10).read()
