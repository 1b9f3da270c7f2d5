"""Tarn-wide alert rules about sign-in (registered like a later app's, analytics.hooks): an account whose
authenticator codes are locked after too many wrong ones (appliance.twofactor). Raised while the lock holds, cleared
when it ends."""

from analytics.choices import Level, Rule
from analytics.hooks import alert_source
from appliance import twofactor

LOCKED = Rule(
    "second_step_locked",
    "Sign-in codes locked",
    Level.CRITICAL,
    help="Too many wrong authenticator codes were typed for an account (someone has its password or its session): "
    "its codes are refused for an hour; recovery codes and passkeys still work.",
)


@alert_source(LOCKED, tarn_wide=True)
def second_step_locked(*, host, now, active):
    for device in twofactor.second_step_locked():
        name = device.user.username
        yield (
            LOCKED.key,
            f"user {name}",
            f"{twofactor.CODE_TRIES} wrong authenticator codes within an hour for {name}: codes are refused until "
            f"{device.locked_until:%Y-%m-%d %H:%M} UTC. Whoever typed them knows the password or holds a session: "
            "change the password and read the audit log (second-factor-locked).",
        )
