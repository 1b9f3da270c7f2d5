"""What many people reload is read once a moment: a value kept by each web process for TARN_DASHBOARD_SECONDS (2 s;
0 reads every time), per name and per what it depends on (the hosts, the columns or panels a role sees). The home
page's panels, the fleet's rows and the benchmarks page's choices: with 50 people reloading a page, its reads were
most of its cost, and what two of them see within two seconds is the same."""

import hashlib
from collections.abc import Callable

from django.conf import settings
from django.core.cache import cache


def kept_a_moment[T](name: str, which: str, compute: Callable[[], T]) -> T:
    """compute()'s value, kept a moment under name for `which` (hashed: a key stays short whatever it names)."""
    key = f"tarn:{name}:" + hashlib.sha256(which.encode()).hexdigest()
    seconds = settings.TARN_DASHBOARD_SECONDS
    if seconds and (value := cache.get(key)) is not None:
        return value
    value = compute()
    if seconds:
        cache.set(key, value, seconds)
    return value
