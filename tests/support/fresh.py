"""Test clients as appliance.auth.fresh sees them: signed in just now (the password typed at the login page counts
as a fresh confirmation for five minutes), or a session whose last confirmation is old (found or stolen later)."""

import time

from django.test import Client

from appliance.auth.fresh import FRESH


def signed_in(user) -> Client:
    """A client signed in as user just now, as the login page leaves it."""
    client = Client()
    client.force_login(user)
    make_fresh(client)
    return client


def make_stale(client, seconds: float = 3600) -> None:
    """The last confirmation this long ago (an hour by default)."""
    session = client.session
    session[FRESH] = time.time() - seconds
    session.save()


def make_fresh(client) -> None:
    session = client.session
    session[FRESH] = time.time()
    session.save()
