"""What later apps read of a host as soon as Tarn reaches it (a new host's pools, disks, links and kernel values),
registered here so the core never imports them: a probe calls each reader in turn, after the host's facts."""

from collections.abc import Callable

# (title, reader): reader(host=Host, operation=Operation) reads and mirrors what its app shows of the host
READERS: list[tuple[str, Callable[..., None]]] = []


def probe_reader(title: str):
    """Register reader(host=, operation=) under a title the probe's progress shows ("Reading links")."""

    def register(reader: Callable[..., None]) -> Callable[..., None]:
        if all(r is not reader for _, r in READERS):
            READERS.append((title, reader))
        return reader

    return register
