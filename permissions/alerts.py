"""Quota alerts, asked at every evaluation from Tarn's copy of the quotas (nothing is asked of the host for them):
an account at 80 %, 90 % and 100 % of a quota on a dataset, each threshold the admin's to move. Registered with
analytics from PermissionsConfig.ready(); each is raised once per account and dataset, and cleared by a read that
finds it below again."""

from analytics.choices import Level, Rule
from analytics.hooks import alert_source
from permissions import selectors

WARNING = Rule(
    "quota_warning",
    "Quota filling",
    Level.WARNING,
    80,
    "%",
    50,
    99,
    "An account's use of a dataset at or above this % of its quota.",
)
HIGH = Rule("quota_high", "Quota nearly used", Level.WARNING, 90, "%", 50, 99, "At or above this % of the quota.")
FULL = Rule(
    "quota_full",
    "Quota used up",
    Level.CRITICAL,
    100,
    "%",
    90,
    100,
    "At or above this % of the quota: the account's writes fail (EDQUOT) until it frees space or the quota grows.",
)


@alert_source(WARNING, HIGH, FULL)
def quota_conditions(*, host, now, active):
    """The highest of the three each account and dataset has reached (one alert, not three)."""
    rules = [r for r in (FULL, HIGH, WARNING) if r.key in active]
    if not rules:
        return
    lowest = min(active[r.key].threshold for r in rules)
    for use in selectors.quotas_at_least(host=host, percent=lowest):
        for rule in rules:
            if use.percent >= active[rule.key].threshold:
                subject = f"{use.kind} {use.name} on {use.dataset}"
                yield (
                    rule.key,
                    subject,
                    (
                        f"{host.name}: {subject} uses {use.percent:.0f} % of its quota ({use.used} of {use.quota} bytes)."
                    ),
                )
                break
