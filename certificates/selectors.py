"""What the certificates page reads: the certificate the front serves and whether HSTS is on (appliance.tls's
files), and the recent certificate operations."""

from appliance import tls
from appliance.selectors import operations_of
from certificates.models import Acme


def certificate_current() -> tls.CertInfo | None:
    return tls.current()


def front_state() -> tls.State:
    return tls.state()


def request_pem() -> str | None:
    """The pending certificate signing request (PEM), if one was made here."""
    pem = tls.request_pem()
    return pem.decode("ascii") if pem else None


def recent_operations(limit: int = 10):
    return operations_of("certificates")[:limit]


def acme_setting() -> Acme | None:
    """ACME's row (where the certificate comes from, how its renewals went), or None before the admin asked."""
    return Acme.objects.filter(pk=1).first()
