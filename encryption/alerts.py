"""Encryption's alert rule, asked at every evaluation from the inventory and the host's facts (nothing runs on the
host for it): registered with analytics from EncryptionConfig.ready(). Raised once per encryption root still locked
the admin's minutes after its host came up, cleared when it is unlocked (or gone)."""

from datetime import timedelta

from analytics.choices import Level, Rule
from analytics.hooks import alert_source
from encryption import selectors

LOCKED = Rule(
    "encryption_locked",
    "Datasets still locked",
    Level.WARNING,
    15,
    "minutes",
    1,
    1440,
    "An encryption root still locked this long after its host came up (a passphrase no one typed after a reboot); "
    "one Tarn locked or unlocked since is left alone.",
)


@alert_source(LOCKED)
def roots_left_locked(*, host, now, active):
    rule = active.get(LOCKED.key)
    if rule is None or host.facts_error:  # unreachable: its facts (the boot time) may be from before a reboot
        return
    for row in selectors.locked_roots(hosts=[host]):
        if row["kept"] or row["booted"] is None or now - row["booted"] < timedelta(minutes=rule.threshold):
            continue
        yield (
            LOCKED.key,
            row["name"],
            f"{_named(row)} on {host.name} is still locked {_minutes(now - row['booted'])} after the host came up: "
            "unlock it on the Encryption page; its shares are off until then.",
        )


def _named(row: dict, shown: int = 3) -> str:
    """The root, and the datasets below it that stay locked with it (the first few)."""
    members = row["members"]
    if not members:
        return row["name"]
    more = f" and {len(members) - shown} more" if len(members) > shown else ""
    return f"{row['name']} (with {', '.join(members[:shown])}{more})"


def _minutes(took: timedelta) -> str:
    minutes = int(took.total_seconds() // 60)
    return f"{minutes} minutes" if minutes < 120 else f"{minutes // 60} hours"
