"""LDAP through SSSD: what an admin gives is checked field by field before sssd.conf is rendered; the rendered file
demands TLS against the given CA and never enumerates; nsswitch gains and loses sss once."""

from datetime import UTC, datetime, timedelta

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

from hostlib.configfiles import InvalidShare
from hostlib.sssd import (
    CA_FILE,
    LdapError,
    LdapSpec,
    check_ldap,
    parse_ldif,
    posix_names,
    render_sssd,
    search_names,
    with_sss,
    without_sss,
)
from tests.support.runners import FakeHost, FakeTransport


def _ca_pem() -> str:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(x509.NameOID.COMMON_NAME, "Lab CA")])
    now = datetime.now(UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(1)
        .not_valid_before(now)
        .not_valid_after(now + timedelta(days=1))
        .sign(key, hashes.SHA256())
    )
    return cert.public_bytes(serialization.Encoding.PEM).decode()


CA = _ca_pem()
SPEC = LdapSpec(uri="ldap://ldap.lab.tarn.test", base_dn="dc=lab,dc=tarn,dc=test", ca_pem=CA)


def problems(password: str = "", **changes) -> dict[str, str]:
    with pytest.raises(InvalidShare) as caught:
        check_ldap(LdapSpec(**{**SPEC.__dict__, **changes}), password)
    return caught.value.problems


def test_a_good_spec_renders_tls_demanded_against_the_ca_and_no_enumeration():
    text = render_sssd(LdapSpec(**{**SPEC.__dict__, "bind_dn": "cn=nas,ou=Service Accounts,dc=lab"}), "s3cret pw")
    assert "ldap_uri = ldap://ldap.lab.tarn.test" in text and "ldap_id_use_start_tls = true" in text
    assert "ldap_tls_reqcert = demand" in text and f"ldap_tls_cacert = {CA_FILE}" in text
    assert "enumerate = false" in text and "ldap_default_authtok = s3cret pw" in text
    assert "ldap_default_bind_dn = cn=nas,ou=Service Accounts,dc=lab" in text
    anonymous = render_sssd(SPEC)
    assert "ldap_default_bind_dn" not in anonymous and "authtok" not in anonymous


@pytest.mark.parametrize(
    ("field", "changes", "password"),
    [
        ("uri", {"uri": "http://ldap.example.com"}, ""),
        ("uri", {"uri": "ldap://ldap.example.com:99999"}, ""),
        ("uri", {"uri": "ldap://ldap.example.com\nldap_tls_reqcert = never"}, ""),
        ("tls", {"tls": "none"}, ""),
        ("tls", {"uri": "ldaps://ldap.example.com"}, ""),  # ldaps:// with StartTLS
        ("base_dn", {"base_dn": "dc=lab\nenumerate = true"}, ""),
        ("base_dn", {"base_dn": 'dc=la"b'}, ""),
        ("bind_dn", {"bind_dn": "cn=a,b"}, "pw"),
        ("bind_password", {"bind_dn": "cn=nas,dc=lab"}, "two\nlines"),
        ("bind_password", {"bind_dn": "cn=nas,dc=lab"}, ""),
        ("bind_password", {"bind_dn": "cn=nas,dc=lab"}, "trailing "),
        ("schema", {"schema": "ad"}, ""),
        ("ca_pem", {"ca_pem": "not a certificate"}, ""),
        ("ca_pem", {"ca_pem": CA + "\n[sssd]\nservices = pam\n"}, ""),
    ],
)
def test_each_bad_value_is_refused_on_its_field(field, changes, password):
    assert field in problems(password, **changes)


def test_nsswitch_gains_sss_once_and_loses_it():
    text = "passwd:         files systemd\ngroup:          files systemd\nhosts: files dns\n"
    once = with_sss(with_sss(text))
    assert once.count(" sss") == 2 and "hosts: files dns" in once
    assert without_sss(once) == text


LDIF = """dn: uid=alice,ou=people,dc=lab
uid: alice
uidNumber: 10001

# refldap://elsewhere
dn: uid=bob,ou=people,dc=lab
uid: bob
cn: Bob
 by
uidNumber: 10002

dn:: dWlkPWPDqWxpbmUsb3U9cGVvcGxlLGRjPWxhYg==
uid:: Y8OpbGluZQ==

dn: uid=evil,ou=people,dc=lab
uid: -rf

dn: uid=quote,ou=people,dc=lab
uid: a"b

dn: uid=bad64,ou=people,dc=lab
uid:: ////

dn: uid=system,ou=people,dc=lab
uid: system
uidNumber: 500

dn: uid=upper,ou=people,dc=lab
uid: Upper
uidNumber: 10003

dn: uid=digits,ou=people,dc=lab
uid: 1000
uidNumber: 10004

dn: uid=noid,ou=people,dc=lab
uid: noid

dn: uid=odd,ou=people,dc=lab
uid: odd\u2028line
uidNumber: 10005
"""


def test_ldif_is_read_with_folded_lines_and_base64_and_hostile_names_are_left_out():
    entries = parse_ldif(LDIF)
    assert [e.dn for e in entries][:3] == [
        "uid=alice,ou=people,dc=lab",
        "uid=bob,ou=people,dc=lab",
        "uid=céline,ou=people,dc=lab",
    ]
    assert entries[1].attrs["cn"] == ["Bobby"]
    names, left_out = posix_names(entries, "uid", "uidNumber")
    # left out: céline, -rf, a"b (not names Tarn writes), no uid, uid 500 (below min_id: sssd never resolves it),
    # Upper and 1000 (not as Samba and useradd take a name), no uidNumber, a value with U+2028 (one line, refused)
    assert names == ["alice", "bob"] and left_out == 9, (names, left_out)
    assert len(entries) == 11


def test_the_search_is_paged_tls_demanded_and_the_password_comes_on_stdin():
    fake = FakeHost()
    fake.answer("ldapsearch", stdout=LDIF)
    t = FakeTransport(fake=fake)
    bound = LdapSpec(**{**SPEC.__dict__, "bind_dn": "cn=nas,dc=lab"})
    names, _ = search_names(t, bound, "s3cret")
    call = fake.calls[-1]
    assert call.argv == [
        "ldapsearch",
        "-LLL",
        "-o",
        "ldif-wrap=no",
        "-H",
        "ldap://ldap.lab.tarn.test",
        "-ZZ",
        "-x",
        "-D",
        "cn=nas,dc=lab",
        "-y",
        "/dev/stdin",
        "-E",
        "pr=500/noprompt",
        "-b",
        "dc=lab,dc=tarn,dc=test",
        "--",
        "(objectClass=posixAccount)",
        "uid",
        "uidNumber",
    ]
    assert call.text == "s3cret" and "s3cret" not in " ".join(call.argv) and names == ["alice", "bob"]
    assert fake.environments[-1][1] == {"LDAPTLS_CACERT": CA_FILE, "LDAPTLS_REQCERT": "demand"}
    fake.answer(
        "ldapsearch", returncode=255, stderr="ldap_start_tls: Connect error (-11)\n\tadditional info: \x1b[31m\n"
    )
    with pytest.raises(LdapError, match="did not list its groups"):
        search_names(t, SPEC, groups=True)
