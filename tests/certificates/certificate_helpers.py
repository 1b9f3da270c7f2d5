"""A CA's side of a request, for the tests: the request signed by the test PKI's intermediate."""

from cryptography import x509
from cryptography.hazmat.primitives import hashes

from tests.certificates.pki import DAY, pem


def sign_request(pki, request: x509.CertificateSigningRequest) -> bytes:
    issuer, key = pki.intermediate
    now = issuer.not_valid_before_utc + 31 * DAY  # within the test PKI's validity (made around its own "now")
    sans = request.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    cert = (
        x509.CertificateBuilder()
        .subject_name(request.subject)
        .issuer_name(issuer.subject)
        .public_key(request.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - DAY)
        .not_valid_after(now + 30 * DAY)
        .add_extension(sans, critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return pem(cert)
