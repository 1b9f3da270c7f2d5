"""The certificates app's alert rules: the certificate the front serves runs out (30 days before, then 7: both
thresholds the admin may change); ACME's renewal failed three times in a row. Asked at every evaluation from the certificate file; raised once, cleared by a
certificate that lasts longer. About Tarn itself, not a host: registered tarn-wide (analytics.hooks)."""

from analytics.choices import Level, Rule
from analytics.hooks import alert_source
from certificates import selectors
from certificates.choices import ACME_FAILURES_ALERT

EXPIRING = Rule(
    "certificate_expiring",
    "HTTPS certificate expiring",
    Level.WARNING,
    30,
    "days",
    1,
    365,
    "The certificate Tarn's HTTPS front serves ends within this many days: renew it (or let ACME) and import it.",
)
EXPIRING_SOON = Rule(
    "certificate_expiring_soon",
    "HTTPS certificate about to expire",
    Level.CRITICAL,
    7,
    "days",
    1,
    90,
    "Within this many days browsers will refuse Tarn: replace the certificate now.",
)


@alert_source(EXPIRING, EXPIRING_SOON, tarn_wide=True)
def certificate_expiring(*, host, now, active):
    current = selectors.certificate_current()
    if current is None:
        return
    left = current.not_after - now
    days = max(0, left.days)
    for rule in (EXPIRING_SOON, EXPIRING):  # the nearer first: both may hold
        if rule.key in active and left.total_seconds() <= active[rule.key].threshold * 86400:
            when = f"on {current.not_after:%Y-%m-%d %H:%M} UTC"
            said = (
                f"has expired ({when})"
                if left.total_seconds() <= 0
                else f"expires in {days} day{'s' if days != 1 else ''} ({when})"
            )
            yield rule.key, "HTTPS certificate", f"The certificate for {', '.join(current.names[:3])} {said}."


RENEWAL_FAILING = Rule(
    "certificate_renewal_failing",
    "ACME renewal failing",
    Level.WARNING,
    ACME_FAILURES_ALERT,
    "failed tries",
    1,
    20,
    "ACME failed this many times in a row to renew the certificate (it tries every few hours): the certificate in use "
    "stays until it runs out. The Certificates page shows the CA's last words.",
)


@alert_source(RENEWAL_FAILING, tarn_wide=True)
def certificate_renewal_failing(*, host, now, active):
    acme = selectors.acme_setting()
    rule = active.get(RENEWAL_FAILING.key)
    if acme is None or rule is None or not acme.renew or acme.failures < rule.threshold:
        return
    yield (
        RENEWAL_FAILING.key,
        "HTTPS certificate",
        f"ACME failed {acme.failures} times in a row for {', '.join(acme.names[:3])}: {acme.last_error[:300]}",
    )
