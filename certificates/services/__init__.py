"""Writes for the front's certificate. By noun: check (the rules a certificate must pass), front (import one, make
a request for a CA, HSTS), acme (a certificate from an ACME CA, and its renewal)."""

from certificates.services.acme import acme_renew_due, acme_start, acme_stop
from certificates.services.check import Checked, certificate_check, covers
from certificates.services.front import (
    certificate_import_start,
    certificate_request_start,
    certificate_trust_start,
    request_names,
)

__all__ = [
    "Checked",
    "acme_renew_due",
    "acme_start",
    "acme_stop",
    "certificate_check",
    "certificate_import_start",
    "certificate_request_start",
    "certificate_trust_start",
    "covers",
    "request_names",
]
