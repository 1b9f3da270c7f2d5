"""Who uses a dataset: later apps (shares, benchmarks) register a finder here, so storage refuses to destroy or
export what they use without importing them (dependencies run one way: later apps → pools → appliance)."""

from collections.abc import Callable

# finder(host, dataset) -> labels of what uses that dataset or anything below it ("SMB share docs", …)
FINDERS: list[Callable[..., list[str]]] = []


def dependents_register(finder: Callable[..., list[str]]) -> Callable[..., list[str]]:
    if finder not in FINDERS:
        FINDERS.append(finder)
    return finder


def dataset_users(*, host, dataset: str) -> list[str]:
    return [label for finder in FINDERS for label in finder(host=host, dataset=dataset)]
