"""The certificate the HTTPS front serves: one imported in place of the self-signed one (checked here, before
anything is queued, and again by the worker), a request for a CA made here, and whether browsers trust it (HSTS).
The switch itself is appliance.tls's; the worker runs as root, the only one that may write the key."""

import ipaddress
import re

from cryptography import x509
from django.core.exceptions import ValidationError

from appliance import tls
from appliance.operations import Tracker, operation_runner, operation_start
from certificates.models import Acme
from certificates.services.check import certificate_check, host_name, when_said


def _request() -> x509.CertificateSigningRequest | None:
    pem = tls.request_pem()
    return x509.load_pem_x509_csr(pem) if pem else None


def certificate_import_start(*, user, certificate: bytes, private_key: bytes, name: str):
    """Serve this certificate and key once checked: an Operation (the key goes to the worker as its secret, never
    into a row or a queue in clear). No key: the certificate a CA sent back for the request made here."""
    checked = certificate_check(certificate=certificate, private_key=private_key, name=name, request=_request())
    return operation_start(
        kind="certificates.import",
        host=None,
        user=user,
        secret=private_key.decode("ascii") if private_key.strip() else None,
        params={
            "certificate": certificate.decode("ascii"),
            "name": name,
            "fingerprint": checked.info.fingerprint,
            "from_request": not private_key.strip(),
        },
    )


@operation_runner("certificates.import", lock="tls", queue="default")
def certificate_import_run(tracker: Tracker) -> None:
    p = tracker.op.params
    if p.get("from_request"):
        try:
            private_key = tls.request_key()
        except FileNotFoundError:
            raise ValidationError(
                "The request's key is gone (another request replaced it?): make a new request."
            ) from None
    elif tracker.secret:
        private_key = tracker.secret.encode("ascii")
    else:
        raise ValidationError("The key did not reach the worker (the queue restarted?): import it again.")
    certificate = p["certificate"].encode("ascii")
    checked = certificate_check(certificate=certificate, private_key=private_key, name=p["name"])  # again, as root
    tracker.progress(30, "Checked: the chain, the key and the name")
    hsts_before = tls.state().hsts
    info = tls.switch(certificate, private_key, keep_hsts=checked.public)
    if p.get("from_request"):
        tls.request_clear()
    if Acme.objects.filter(pk=1, renew=True).update(renew=False):
        tracker.log("ACME renewals stopped: this certificate is served in place of the one ACME gave")
    said = f"Serving {info.subject} (SHA-256 {info.fingerprint}), valid until {when_said(info.not_after)}"
    if hsts_before and not checked.public:
        said += "; HSTS turned off: browsers do not trust this certificate's CA by themselves (turn it on again once they do)"
    tracker.progress(100, said)


def request_names(text: str) -> tuple[list[str], list[str]]:
    """The names and addresses typed for a request (commas, spaces or lines between them): each checked."""
    found = [part for part in re.split(r"[\s,]+", text or "") if part]
    if not found:
        raise ValidationError({"names": "Give at least one host name or address."})
    if len(found) > 20:
        raise ValidationError({"names": f"{len(found)} names: at most 20."})
    names, addresses = [], []
    for part in found:
        try:
            one = host_name(part)
        except ValidationError:
            raise ValidationError({"names": f"{part[:60]}: not a host name or an IP address."}) from None
        target = addresses if _is_address(one) else names
        if one not in target:
            target.append(one)
    return names, addresses


def _is_address(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
        return True
    except ValueError:
        return False


def certificate_request_start(*, user, names: str):
    """A new key kept here and a request for these names to hand to a CA: an Operation (root writes the key)."""
    dns, addresses = request_names(names)
    return operation_start(
        kind="certificates.request", host=None, user=user, params={"names": dns, "addresses": addresses}
    )


@operation_runner("certificates.request", lock="tls", queue="default")
def certificate_request_run(tracker: Tracker) -> None:
    p = tracker.op.params
    dns, addresses = request_names(" ".join([*p["names"], *p["addresses"]]))  # the rules again, as root
    tls.request_make(dns, addresses)
    tracker.progress(
        100,
        f"A request for {', '.join(dns + addresses)}: download it from the Certificates page and give it to your CA; "
        "its key stays here (import the certificate the CA sends back without a key)",
    )


def certificate_trust_start(*, user, trusted: bool):
    """HSTS on (browsers trust the certificate: they will insist on HTTPS for a year) or off."""
    return operation_start(kind="certificates.trust", host=None, user=user, params={"trusted": bool(trusted)})


@operation_runner("certificates.trust", lock="tls", queue="default")
def certificate_trust_run(tracker: Tracker) -> None:
    trusted = tracker.op.params["trusted"] is True
    tls.trust_set(trusted)
    tracker.progress(
        100,
        "HSTS on: browsers that reached Tarn over HTTPS will insist on HTTPS for a year"
        if trusted
        else "HSTS off (a browser that saw it keeps it until it expires)",
    )
