"""A certificate from an ACME CA (Let's Encrypt, or an office's own: step-ca, …) for the front, and its renewal at
2/3 of its lifetime while it is the one served. The admin's choices are kept in the one Acme row; the order runs as
an Operation in the root worker (certificates.acme_order); a failure leaves the certificate in use as it was, counts
in the row, and three in a row raise an alert (certificates.alerts)."""

import re
from datetime import timedelta
from urllib.parse import urlsplit

from cryptography import x509
from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from appliance import tls
from appliance.operations import Tracker, operation_runner, operation_start
from certificates import acme_order
from certificates.acme_order import said
from certificates.choices import ACME_MIN_DAYS, ACME_RENEW_AT, ACME_RETRY_HOURS
from certificates.models import Acme
from certificates.services.check import certificate_check, covers, roots_read, when_said

NAMES_MAX = 20


def acme_names(text: str) -> list[str]:
    """The DNS names typed (spaces, commas or lines between them): each one a name the CA can reach over HTTP."""
    found = [part.rstrip(".") for part in re.split(r"[\s,]+", text or "") if part]
    if not found:
        raise ValidationError({"names": "Give the DNS name people use to reach Tarn."})
    if len(found) > NAMES_MAX:
        raise ValidationError({"names": f"{len(found)} names: at most {NAMES_MAX}."})
    names = []
    for part in found:
        shown = part[:60]
        if part.startswith("*"):
            raise ValidationError({"names": f"{shown}: a wildcard needs DNS-01; Tarn proves each name over HTTP."})
        try:
            name = part.encode("idna").decode("ascii").lower()
        except UnicodeError:
            name = ""
        if not tls.dns_name(name) or re.fullmatch(r"[0-9.]+|.*:.*", part):
            raise ValidationError({"names": f"{shown}: not a DNS name (ACME here proves names, not addresses)."})
        if name not in names:
            names.append(name)
    return names


def _directory(url: str) -> str:
    url = (url or "").strip()
    parts = urlsplit(url)
    if parts.scheme != "https" or not parts.hostname or parts.username or parts.password:
        raise ValidationError({"directory": "The CA's ACME directory: an https:// URL."})
    return url


def acme_start(*, user, directory: str, email: str, names: str, roots: str = "", agree: bool = False):
    """Keep the admin's choices and order a certificate now: an Operation. A new directory means a new account."""
    if not settings.TARN_FRONT:
        raise ValidationError(
            "ACME needs Tarn's HTTPS front: the CA checks each name on its port 80 (make run as root starts it)."
        )
    directory, names_, _ = _directory(directory), acme_names(names), roots_read(roots)
    if not agree:
        raise ValidationError({"agree": "Ordering from a CA means agreeing to its terms of service: tick the box."})
    with transaction.atomic():
        row, _ = Acme.objects.select_for_update().get_or_create(pk=1, defaults={"directory": directory})
        if row.account_directory != directory:
            row.account, row.account_directory = "", ""
        row.directory, row.email, row.names, row.roots, row.renew = directory, email.strip(), names_, roots, True
        row.save()
        return operation_start(kind="certificates.acme", host=None, user=user, params={"renewal": False})


def acme_stop(*, user=None) -> bool:
    """No more renewals (the certificate in use stays until it runs out or another replaces it)."""
    return bool(Acme.objects.filter(pk=1, renew=True).update(renew=False))


def acme_renew_due(now=None) -> bool:
    """Beat, hourly: order the renewal once 2/3 of the certificate's lifetime has passed, while the certificate ACME
    gave is the one served; after a failure, again ACME_RETRY_HOURS later."""
    now = now or timezone.now()
    row = Acme.objects.filter(pk=1, renew=True).exclude(fingerprint="").first()
    if row is None or row.renew_after is None or now < row.renew_after:
        return False
    if row.failures and row.tried_at and now - row.tried_at < timedelta(hours=ACME_RETRY_HOURS):
        return False
    current = tls.current()
    if current is None or current.fingerprint != row.fingerprint:
        return False  # another certificate is served (imported since): not ACME's to replace
    try:
        operation_start(kind="certificates.acme", host=None, user=None, params={"renewal": True})
    except ValidationError:  # one is running
        return False
    return True


@operation_runner("certificates.acme", lock="tls", queue="default")
def acme_run(tracker: Tracker) -> None:
    renewal = tracker.op.params.get("renewal") is True
    Acme.objects.filter(pk=1).update(tried_at=timezone.now())
    try:
        row = Acme.objects.filter(pk=1).first()
        if row is None:
            raise ValidationError("ACME is not set up (its settings were removed): order again from the page.")
        # the rules again, as root; a renewal only while ACME's certificate is still the one served (an import may
        # have come between the hour's check and now)
        names, roots, directory = acme_names(" ".join(row.names)), roots_read(row.roots), _directory(row.directory)
        before = tls.current()
        if renewal and (not row.renew or before is None or before.fingerprint != row.fingerprint):
            raise ValidationError("Not renewed: the certificate served is no longer the one ACME gave.")
        issued = acme_order.obtain(
            directory=directory,
            email=row.email,
            names=names,
            roots=row.roots,
            account=row.account if row.account_directory == directory else "",
            progress=tracker.progress,
        )
        Acme.objects.filter(pk=1).update(account=issued.account, account_directory=directory)
        tracker.progress(80, "Issued: checking the chain, the key and the names")
        checked = certificate_check(
            certificate=issued.chain, private_key=issued.key, name=names[0], roots=roots, anchored=True
        )
        _fits(issued.chain, names, checked, before, renewal)
        info = tls.switch(issued.chain, issued.key, keep_hsts=checked.public)
    except Exception as exc:
        words = "; ".join(exc.messages) if isinstance(exc, ValidationError) else (said(exc) or type(exc).__name__)
        Acme.objects.filter(pk=1).update(failures=F("failures") + 1, last_error=words[:1000])
        raise
    renew_after = info.not_before + (info.not_after - info.not_before) * ACME_RENEW_AT
    Acme.objects.filter(pk=1).update(
        fingerprint=info.fingerprint, issued_at=timezone.now(), renew_after=renew_after, failures=0, last_error=""
    )
    tracker.progress(
        100,
        f"Serving {', '.join(info.names[:4])} from {info.issuer} (SHA-256 {info.fingerprint}), valid until "
        f"{when_said(info.not_after)}; renewed from {when_said(renew_after)}",
    )


def _fits(chain: bytes, names: list[str], checked, before, renewal: bool) -> None:
    """What the CA sent may replace the certificate in use: it names every name, lasts a day at least (and longer
    than the one it renews), and keeps HSTS on if it is on (a certificate browsers do not trust by themselves
    would turn it off, and with it the protection against a downgrade)."""
    leaf = x509.load_pem_x509_certificate(chain)
    missing = [n for n in names if not covers(leaf, n)]
    if missing:
        raise ValidationError(f"The CA's certificate does not name {', '.join(missing)}.")
    info = checked.info
    if info.not_after - timezone.now() < timedelta(days=ACME_MIN_DAYS):
        raise ValidationError(f"The CA's certificate ends {when_said(info.not_after)}: too soon to serve.")
    if renewal and before is not None and info.not_after <= before.not_after:
        raise ValidationError("The CA's certificate ends no later than the one it would renew: kept the one in use.")
    if tls.state().hsts and not checked.public:
        raise ValidationError(
            "HSTS is on and browsers would not trust this CA by themselves: kept the certificate in use (turn HSTS "
            "off first to serve a private CA's)."
        )
