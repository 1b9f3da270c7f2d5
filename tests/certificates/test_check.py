"""Issue 41: a certificate to serve is checked before anything is queued, each refusal naming its field: the key is
the certificate's, one unencrypted key; the chain is certificates only, in date, each signed by the next, ending at a
root given or a CA this machine trusts; the SAN covers the name browsers use."""

import time

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519
from cryptography.x509.oid import ExtendedKeyUsageOID, ExtensionOID, NameOID
from django.core.exceptions import ValidationError

from appliance import tls
from certificates import services
from certificates.choices import PEM_MAX
from certificates.services import check
from tests.certificates.pki import DAY, NOW, Pki, key_pem, make, pem, rsa_key


@pytest.fixture(scope="module")
def pki():
    return Pki()


def refused(**kw) -> dict[str, list[str]]:
    kw.setdefault("now", NOW)
    with pytest.raises(ValidationError) as caught:
        services.certificate_check(**kw)
    return caught.value.message_dict


def test_a_complete_chain_with_its_key_for_its_name_passes(pki):
    checked = services.certificate_check(certificate=pki.full, private_key=pki.key, name="nas.example.org", now=NOW)
    info = checked.info
    assert not checked.public, "its root came with it: browsers do not know it by themselves"
    assert info.subject == "CN=nas.example.org" and info.issuer == "CN=Test Intermediate" and not info.self_signed
    assert info.names == ("nas.example.org", "*.lan.example.org", "192.0.2.10")


@pytest.mark.parametrize(
    ("name", "ok"),
    [
        ("NAS.example.org", True),
        ("nas.example.org.", True),
        ("tarn.lan.example.org", True),  # the wildcard covers one label
        ("a.b.lan.example.org", False),
        ("lan.example.org", False),
        ("192.0.2.10", True),
        ("192.0.2.11", False),
        ("other.example.org", False),
    ],
)
def test_the_san_must_cover_the_name(pki, name, ok):
    if ok:
        services.certificate_check(certificate=pki.full, private_key=pki.key, name=name, now=NOW)
    else:
        errors = refused(certificate=pki.full, private_key=pki.key, name=name)
        assert list(errors) == ["name"] and f"not for {name}" in errors["name"][0]
        assert "nas.example.org, *.lan.example.org, 192.0.2.10" in errors["name"][0]


def test_a_key_that_is_not_the_certificates_is_refused(pki):
    other = key_pem(make("x")[1])
    errors = refused(certificate=pki.full, private_key=other, name="nas.example.org")
    assert errors == {"private_key": ["This key is not the certificate's: its public half differs."]}


def test_a_pem_with_two_keys_or_an_encrypted_one_or_no_key_is_refused(pki):
    errors = refused(certificate=pki.full, private_key=pki.key + pki.key, name="nas.example.org")
    assert errors == {"private_key": ["2 PEM blocks: give exactly one private key."]}
    errors = refused(certificate=pki.full, private_key=key_pem(pki.server[1], b"pass"), name="nas.example.org")
    assert "protected by a passphrase" in errors["private_key"][0]
    errors = refused(certificate=pki.full, private_key=pem(pki.root[0]), name="nas.example.org")
    assert errors == {"private_key": ["A CERTIFICATE block, not a private key."]}
    errors = refused(certificate=pki.full, private_key=b"", name="nas.example.org")
    assert errors["private_key"][0].startswith("Paste the key or choose its file")
    errors = refused(certificate=pki.full, private_key=b"just words", name="nas.example.org")
    assert "text outside the PEM blocks" in errors["private_key"][0]


def test_garbage_before_between_or_after_the_blocks_is_refused(pki):
    for bad in (
        b"hello\n" + pki.full,
        pki.full + b"trailing garbage\n",
        pki.chain(pki.server[0]) + b"x\n" + pem(pki.root[0]),
    ):
        errors = refused(certificate=bad, private_key=pki.key, name="nas.example.org")
        assert list(errors) == ["certificate"] and "text" in errors["certificate"][0], errors
    damaged = pki.full.replace(b"\n", b"\nAAAA", 3)
    errors = refused(certificate=damaged, private_key=pki.key, name="nas.example.org")
    assert errors["certificate"][0].startswith("The certificate cannot be read (cut or damaged?)")
    errors = refused(certificate=pki.full + pki.key, private_key=pki.key, name="nas.example.org")
    assert errors == {"certificate": ["It holds a private key: give the key in its own field."]}


def test_a_one_mib_paste_is_refused_before_it_is_read(pki):
    big = pki.full + b"\n" * (1 << 20)
    errors = refused(certificate=big, private_key=pki.key, name="nas.example.org")
    assert errors == {
        "certificate": [f"{len(big) >> 10} KiB: a certificate chain or key in PEM is at most {PEM_MAX >> 10} KiB."]
    }


def test_a_chain_missing_its_intermediate_is_incomplete(pki):
    errors = refused(certificate=pki.chain(pki.server[0], pki.root[0]), private_key=pki.key, name="nas.example.org")
    assert "out of order or broken: CN=Test Root CA did not sign CN=nas.example.org" in errors["certificate"][0]
    errors = refused(certificate=pki.chain(pki.server[0]), private_key=pki.key, name="nas.example.org")
    assert errors["certificate"][0].startswith("The chain is incomplete: the certificate of CN=Test Intermediate")


def test_a_chain_out_of_order_is_refused(pki):
    wrong = pki.chain(pki.server[0], pki.root[0], pki.intermediate[0])
    assert "out of order" in refused(certificate=wrong, private_key=pki.key, name="nas.example.org")["certificate"][0]


def test_a_chain_may_end_at_a_ca_this_machine_trusts(pki, monkeypatch, tmp_path):
    bundle = tmp_path / "ca-certificates.crt"
    bundle.write_bytes(pem(pki.root[0]))
    monkeypatch.setattr(check, "SYSTEM_CAS", str(bundle))
    check._system_cas.cache_clear()
    try:
        chain = pki.chain(pki.server[0], pki.intermediate[0])
        checked = services.certificate_check(certificate=chain, private_key=pki.key, name="nas.example.org", now=NOW)
        assert checked.public, "a CA this machine trusts: browsers do too, HSTS may stay"
        errors = refused(certificate=pki.chain(pki.server[0]), private_key=pki.key, name="nas.example.org")
        assert "incomplete" in errors["certificate"][0], "an intermediate is never looked up, only roots"
    finally:
        check._system_cas.cache_clear()


def test_an_expired_or_not_yet_valid_certificate_is_refused(pki):
    errors = refused(certificate=pki.full, private_key=pki.key, name="nas.example.org", now=NOW + 61 * DAY)
    assert errors["certificate"][0].startswith("The certificate expired on 2027-01-28")
    errors = refused(certificate=pki.full, private_key=pki.key, name="nas.example.org", now=NOW - 31 * DAY)
    assert errors["certificate"][0].startswith("The certificate is not valid until 2026-10-30")
    old = make("Old Intermediate", issuer=pki.root, ca=True, end=NOW - DAY)
    server = make("nas.example.org", issuer=old, dns=["nas.example.org"])
    errors = refused(
        certificate=pki.chain(server[0], old[0], pki.root[0]), private_key=key_pem(server[1]), name="nas.example.org"
    )
    assert errors["certificate"][0].startswith("Certificate 2 of the chain (CN=Old Intermediate) expired on")


def test_a_weak_rsa_key_is_refused_a_strong_one_passes(pki):
    for bits, ok in ((1024, False), (2048, True)):
        key = rsa_key(bits)
        server = make("nas.example.org", issuer=pki.intermediate, key=key, dns=["nas.example.org"])
        kw = {"certificate": pki.chain(server[0], pki.intermediate[0], pki.root[0]), "private_key": key_pem(key)}
        if ok:
            services.certificate_check(**kw, name="nas.example.org", now=NOW)
        else:
            assert refused(**kw, name="nas.example.org") == {"private_key": ["An RSA key of 1024 bits: at least 2048."]}


def test_a_self_signed_certificate_is_its_own_root(pki):
    cert, key = make("nas.example.org", dns=["nas.example.org"])
    checked = services.certificate_check(
        certificate=pem(cert), private_key=key_pem(key), name="nas.example.org", now=NOW
    )
    assert checked.info.self_signed and not checked.public


def test_a_damaged_extension_is_a_field_error_not_a_crash(pki):
    """Found in review: a malformed SAN was parsed lazily, past the checks, and made a 500."""
    key = make("x")[1]
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "nas.example.org")])
    bad_san = x509.UnrecognizedExtension(ExtensionOID.SUBJECT_ALTERNATIVE_NAME, b"\x30\x03\x02\x01\x00")
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(1)
        .not_valid_before(NOW - DAY)
        .not_valid_after(NOW + DAY)
        .add_extension(bad_san, critical=False)
        .sign(key, hashes.SHA256())
    )
    errors = refused(certificate=pem(cert), private_key=key_pem(key), name="nas.example.org")
    assert list(errors) == ["certificate"] and errors["certificate"][0].startswith("The certificate cannot be read")


def test_what_browsers_refuse_past_the_signatures_is_refused(pki):
    """Found in review: signatures alone let through a leaf signed by a leaf, a CA as the server, a client-only
    certificate."""
    under_leaf = make("nas.example.org", issuer=pki.server, dns=["nas.example.org"])
    chain = pki.chain(under_leaf[0], pki.server[0], pki.intermediate[0], pki.root[0])
    errors = refused(certificate=chain, private_key=key_pem(under_leaf[1]), name="nas.example.org")
    assert errors["certificate"][0].startswith("Browsers would refuse this chain"), errors
    as_ca = make("nas.example.org", issuer=pki.intermediate, ca=True, dns=["nas.example.org"])
    chain = pki.chain(as_ca[0], pki.intermediate[0], pki.root[0])
    errors = refused(certificate=chain, private_key=key_pem(as_ca[1]), name="nas.example.org")
    assert errors["certificate"][0].startswith("Browsers would refuse this chain"), errors
    client = make(
        "nas.example.org", issuer=pki.intermediate, dns=["nas.example.org"], eku=[ExtendedKeyUsageOID.CLIENT_AUTH]
    )
    chain = pki.chain(client[0], pki.intermediate[0], pki.root[0])
    errors = refused(certificate=chain, private_key=key_pem(client[1]), name="nas.example.org")
    assert errors["certificate"][0].startswith("Browsers would refuse this chain"), errors


@pytest.mark.parametrize("key", [ec.generate_private_key(ec.SECP256K1()), ed25519.Ed25519PrivateKey.generate()])
def test_keys_browsers_do_not_take_are_refused(pki, key):
    cert, _ = make("nas.example.org", issuer=pki.intermediate, key=key, dns=["nas.example.org"])
    errors = refused(
        certificate=pki.chain(cert, pki.intermediate[0], pki.root[0]), private_key=key_pem(key), name="nas.example.org"
    )
    assert errors == {"private_key": ["An RSA (2048 bits or more) or ECDSA (P-256, P-384) key: what browsers take."]}


def test_pem_is_read_in_linear_time():
    """Found in review: a regular expression took ~60 s on 256 KiB of BEGIN lines with no END."""
    hostile = b"-----BEGIN CERTIFICATE-----\n" * ((PEM_MAX - 1) // 28)
    started = time.monotonic()
    errors = refused(certificate=hostile, private_key=b"", name="nas.example.org")
    assert time.monotonic() - started < 1 and "not closed" in errors["certificate"][0]
    errors = refused(certificate=b"-----BEGIN CERTIFICATE-----\nAAAA\n", private_key=b"", name="nas.example.org")
    assert errors["certificate"] == ["The CERTIFICATE block has no END line (cut short?)."]


def test_what_openssl_and_editors_write_is_taken(pki):
    """openssl ecparam -genkey writes EC PARAMETERS before the key; some editors start a file with a BOM; CRLF."""
    params = b"-----BEGIN EC PARAMETERS-----\nBggqhkjOPQMBBw==\n-----END EC PARAMETERS-----\n"
    key = pki.server[1].private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()
    )
    crlf = b"\xef\xbb\xbf" + pki.full.replace(b"\n", b"\r\n")
    services.certificate_check(certificate=crlf, private_key=params + key, name="nas.example.org", now=NOW)


@pytest.mark.parametrize(
    ("name", "said"),
    [("*", "A host name"), ("nas example", "A host name"), ("", "Give the name"), ("a" * 64 + ".org", "A host name")],
)
def test_a_name_that_is_no_host_name_is_refused(pki, name, said):
    errors = refused(certificate=pki.full, private_key=pki.key, name=name)
    assert list(errors) == ["name"] and errors["name"][0].startswith(said)


def test_an_internationalised_name_is_matched_in_its_ascii_form():
    cert, key = make("nas", dns=["nås.example.org".encode("idna").decode()])
    services.certificate_check(certificate=pem(cert), private_key=key_pem(key), name="nås.example.org", now=NOW)


def test_a_chain_may_end_at_a_private_cas_root_given_with_it_which_is_no_public_ca(pki):
    """ACME from an office's CA: the chain it sends ends at an intermediate; the root given for that CA anchors it."""
    chain = pki.chain(pki.server[0], pki.intermediate[0])
    roots = check.roots_read(pem(pki.root[0]).decode())
    checked = services.certificate_check(
        certificate=chain, private_key=pki.key, name="nas.example.org", now=NOW, roots=roots
    )
    assert not checked.public, "a private CA: browsers do not trust it by themselves"
    errors = refused(certificate=chain, private_key=pki.key, name="nas.example.org")
    assert "incomplete" in errors["certificate"][0], "without the root it is refused"


@pytest.mark.parametrize(
    "text, said",
    [
        ("not pem", "outside the PEM blocks"),
        ("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n", "never a key"),
        ("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n", "cannot be read"),
        ("é", "ASCII"),
    ],
)
def test_a_private_cas_roots_are_ca_certificates_only(text, said):
    with pytest.raises(ValidationError) as caught:
        check.roots_read(text)
    assert said in caught.value.message_dict["roots"][0]


def test_a_server_certificate_is_no_root(pki):
    with pytest.raises(ValidationError) as caught:
        check.roots_read(pem(pki.server[0]).decode())
    assert "is not a CA's (CA:TRUE)" in caught.value.message_dict["roots"][0]


def test_an_acme_chain_ends_at_a_ca_trusted_here_never_at_a_root_the_ca_sends_along(pki):
    """What an ACME CA sends is checked anchored: its own root, sent along, is dropped; the chain must then end at
    Debian's CAs or the roots the admin gave."""
    sent = pki.chain(pki.server[0], pki.intermediate[0], pki.root[0])
    errors = refused(certificate=sent, private_key=pki.key, name="nas.example.org", anchored=True)
    assert "The chain is incomplete" in errors["certificate"][0], "a root it made up is no anchor"
    roots = check.roots_read(pem(pki.root[0]).decode())
    checked = services.certificate_check(
        certificate=sent, private_key=pki.key, name="nas.example.org", now=NOW, roots=roots, anchored=True
    )
    assert not checked.public
    alone = tls.self_signed(["nas.example.org"], [], now=NOW)
    errors = refused(certificate=alone[0], private_key=alone[1], name="nas.example.org", anchored=True)
    assert errors["certificate"] == ["The CA sent a certificate that signed itself: refused."]
