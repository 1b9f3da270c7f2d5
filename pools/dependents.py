"""Who uses a dataset: later apps (shares, benchmarks, iSCSI) register a finder here, so storage refuses to destroy
or export what they use without importing them (dependencies run one way: later apps → pools → appliance); and a
releaser, so locking an encryption root first takes what serves a dataset below it offline (an iSCSI LUN holds its
zvol open: its key would not unload), and unlocking brings it back."""

from collections.abc import Callable

# finder(host, dataset) -> labels of what uses that dataset or anything below it ("SMB share docs", …)
FINDERS: list[Callable[..., list[str]]] = []


def dependents_register(finder: Callable[..., list[str]]) -> Callable[..., list[str]]:
    if finder not in FINDERS:
        FINDERS.append(finder)
    return finder


def dataset_users(*, host, dataset: str) -> list[str]:
    return [label for finder in FINDERS for label in finder(host=host, dataset=dataset)]


# release(host=, t=, roots=[…], locking=True|False) -> labels of what went offline (locking) or came back
RELEASERS: list[Callable[..., list[str]]] = []


def releaser_register(releaser: Callable[..., list[str]]) -> Callable[..., list[str]]:
    if releaser not in RELEASERS:
        RELEASERS.append(releaser)
    return releaser


def release(*, host, t, roots: list[str], locking: bool) -> list[str]:
    """Before roots lock (locking=True): what serves a dataset below them taken offline; after they unlock (or a lock
    that did not happen): brought back."""
    return [label for releaser in RELEASERS for label in releaser(host=host, t=t, roots=roots, locking=locking)]
