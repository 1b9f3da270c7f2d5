"""Where later apps plug into alerts (as appliance.dashboard does for the home page): their rules join the table
admins tune, and their conditions are asked at every evaluation. Registered from the app's AppConfig.ready()."""

from collections.abc import Callable, Iterable

from analytics.choices import RULE, RULES, Rule

SOURCES: list[Callable[..., Iterable[tuple[str, str, str]]]] = []
TARN_SOURCES: list[Callable[..., Iterable[tuple[str, str, str]]]] = []  # about Tarn itself: asked with host=None


def alert_source(*rules: Rule, tarn_wide: bool = False):
    """Decorator for fn(*, host, now, active) -> (rule key, subject, message) for each condition that holds on host
    now; active: the enabled rules by key, with the admin's level and threshold. rules: the ones it raises.
    tarn_wide: the condition is about Tarn itself (its own backups), asked once per evaluation with host=None; its
    alerts belong to no host."""

    def register(fn):
        for rule in rules:
            if rule.key not in RULE:
                RULES.append(rule)
                RULE[rule.key] = rule
        chosen = TARN_SOURCES if tarn_wide else SOURCES
        if fn not in chosen:
            chosen.append(fn)
        return fn

    return register
