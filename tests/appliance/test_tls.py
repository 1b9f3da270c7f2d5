"""Issue 41, the HTTPS front's logic: the certificate made at the first start (appliance.tls), the front's nginx
configuration (hostlib.webfront.render), and whose address a login is counted against. The front itself (nginx,
real handshakes) is tests/integration/test_https_front.py."""

import datetime
import hashlib
import os
import stat

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID
from django.test import RequestFactory

from appliance import tls
from appliance.web import client_address
from hostlib import webfront


@pytest.fixture
def data(settings, tmp_path):
    settings.DATA_DIR = tmp_path / "var"
    settings.DATA_DIR.mkdir(mode=0o750)
    return settings.DATA_DIR


def test_a_made_certificate_is_p256_for_its_names_and_addresses_within_browsers_lifetime():
    now = datetime.datetime(2026, 11, 29, tzinfo=datetime.UTC)
    cert_pem, key_pem = tls.self_signed(["nas", "nas.lan", "localhost"], ["127.0.0.1", "192.168.1.20", "::1"], now=now)
    cert = x509.load_pem_x509_certificate(cert_pem)
    key = serialization.load_pem_private_key(key_pem, password=None)
    assert isinstance(key, ec.EllipticCurvePrivateKey) and key.curve.name == "secp256r1"
    assert cert.public_key().public_numbers() == key.public_key().public_numbers()
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert sans.get_values_for_type(x509.DNSName) == ["nas", "nas.lan", "localhost"]
    assert [str(a) for a in sans.get_values_for_type(x509.IPAddress)] == ["127.0.0.1", "192.168.1.20", "::1"]
    assert cert.not_valid_after_utc - now <= datetime.timedelta(days=398)  # what browsers accept
    assert cert.not_valid_before_utc < now
    eku = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(eku) == [ExtendedKeyUsageOID.SERVER_AUTH]
    assert cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is False

    info = tls.describe(cert_pem)
    der = cert.public_bytes(serialization.Encoding.DER)
    assert info.fingerprint.replace(":", "") == hashlib.sha256(der).hexdigest().upper()
    assert info.names == ("nas", "nas.lan", "localhost", "127.0.0.1", "192.168.1.20", "::1")
    assert info.self_signed and info.subject == info.issuer and "CN=nas" in info.subject
    assert info.days_left(now) == 397


def test_no_name_no_certificate():
    with pytest.raises(ValueError, match="at least one name"):
        tls.self_signed([], ["127.0.0.1"])


def test_this_machines_names_are_dns_names_and_its_addresses_include_loopback():
    names, addresses = tls.local_names()
    assert "localhost" in names and all(tls.dns_name(n) for n in names)
    assert "127.0.0.1" in addresses and "::1" in addresses
    assert not [a for a in addresses if a.startswith("fe80")], "link-local addresses name no one else's route"


def test_the_first_start_makes_the_certificate_once_with_a_private_key(data):
    info, made = tls.ensure_certificate()
    cert, key = data / "tls" / "cert.pem", data / "tls" / "key.pem"
    assert made and info.fingerprint == tls.describe(cert.read_bytes()).fingerprint
    assert stat.S_IMODE(os.lstat(key).st_mode) == 0o600 and stat.S_IMODE(os.lstat(cert).st_mode) == 0o640
    assert stat.S_IMODE(os.lstat(data / "tls").st_mode) == 0o710
    again, made = tls.ensure_certificate()
    assert not made and again == info, "the next start keeps the certificate the admin may already trust"
    assert tls.current() == info


def test_a_certificate_file_others_may_write_is_refused(data):
    tls.ensure_certificate()
    os.chmod(data / "tls" / "key.pem", 0o644)
    with pytest.raises(tls.datadir.LayoutError, match="readable by others"):
        tls.ensure_certificate()


def _front(**kw) -> webfront.Front:
    values = dict(
        https_port=443,
        http_port=80,
        cert="/var/tarn/tls/cert.pem",
        key="/var/tarn/tls/key.pem",
        upstream="/var/tarn/sock/web.sock",
        pid_file="/var/tarn/tls/nginx.pid",
        temp_dir="/var/tarn/front",
    )
    return webfront.Front(**(values | kw))


def test_the_front_serves_tls_1_2_and_1_3_with_forward_secret_aead_ciphers_only():
    text = webfront.render(_front())
    assert "ssl_protocols TLSv1.2 TLSv1.3;" in text and text.count("ssl_protocols") == 1
    ciphers = next(line for line in text.splitlines() if "ssl_ciphers" in line).split()[1].rstrip(";").split(":")
    assert ciphers and all(c.startswith("ECDHE-") and ("GCM" in c or "CHACHA20" in c) for c in ciphers), ciphers
    assert "ssl_session_tickets off;" in text and "server_tokens off;" in text
    assert "listen 0.0.0.0:443 ssl http2;" in text and "listen [::]:443 ssl http2;" in text


def test_plain_http_only_redirects_and_passes_healthz():
    text = webfront.render(_front())
    plain = text.split("# Plain HTTP", 1)[1].split("server {", 2)[1]
    assert "return 301 https://$host$request_uri;" in plain
    assert plain.count("proxy_pass") == 1 and "location = /healthz" in plain
    other = webfront.render(_front(https_port=8443, http_port=8080))
    assert "return 301 https://$host:8443$request_uri;" in other and "listen 0.0.0.0:8080;" in other


def test_hsts_only_once_the_certificate_is_trusted():
    assert "Strict-Transport-Security" not in webfront.render(_front())
    assert 'add_header Strict-Transport-Security "max-age=31536000; includeSubDomains" always;' in webfront.render(
        _front(hsts=True)
    )


def test_the_web_gets_the_clients_address_and_scheme_set_by_the_front_and_uploads_stream_unbuffered():
    text = webfront.render(_front(user="tarn"))
    assert text.startswith("# Written by Tarn") and "\nuser tarn;\n" in text
    assert text.count("proxy_set_header X-Real-IP $remote_addr;") == text.count("proxy_pass http://tarn_web;") == 3
    assert text.count("X-Forwarded-Proto https;") == 2 and text.count("X-Forwarded-Proto http;") == 1
    upload = text.split("location = /backups/upload/ {", 1)[1].split("}", 1)[0]
    assert "client_max_body_size 0;" in upload and "proxy_request_buffering off;" in upload
    assert "server unix:/var/tarn/sock/web.sock;" in text and "pid /var/tarn/tls/nginx.pid;" in text
    assert "user " not in webfront.render(_front()).split("http {")[0].replace("# Written", "")


def test_behind_the_front_a_login_counts_against_the_address_the_front_saw(settings):
    request = RequestFactory().get("/", REMOTE_ADDR="", HTTP_X_REAL_IP="192.0.2.7")
    settings.TARN_FRONT = True
    assert client_address(request) == "192.0.2.7"
    over_tcp = RequestFactory().get("/", REMOTE_ADDR="192.0.2.8", HTTP_X_REAL_IP="10.0.0.1")
    assert client_address(over_tcp) == "192.0.2.8", "on TCP (not the front's socket) the header is anyone's"
    settings.TARN_FRONT = False  # without the front, a header any client can send means nothing
    assert client_address(request) is None
    assert client_address(over_tcp) == "192.0.2.8"


@pytest.mark.parametrize(
    "bad",
    [
        {"user": "tarn; daemon on"},
        {"cert": "/var/tarn/tls/cert.pem; include /etc/shadow"},
        {"upstream": "relative/web.sock"},
        {"https_port": 0},
        {"http_port": 443},
        {"listen": ("0.0.0.0:80 default",)},
    ],
)
def test_a_value_that_would_be_nginx_syntax_is_refused_before_a_file_is_written(bad):
    with pytest.raises(ValueError, match="cannot go into nginx.conf"):
        webfront.render(_front(**bad))
