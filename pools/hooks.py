"""Where later apps add to the pools app's pages (as appliance.dashboard does for the home page): a note per disk
(its health) in the disk list and on a pool's vdev tree, and sections of a pool's page (its forecast), so the pools
app never imports them. Registered from the later app's AppConfig.ready()."""

from collections.abc import Callable

# note(host=…, disks=[Disk, …]) -> {disk name: {"state", "label", "badge", "reason", "url"}}
NOTES: list[Callable[..., dict[str, dict]]] = []


def disk_notes(note: Callable[..., dict[str, dict]]) -> Callable[..., dict[str, dict]]:
    if note not in NOTES:
        NOTES.append(note)
    return note


def notes_for(*, host, disks) -> dict[str, dict]:
    found: dict[str, dict] = {}
    for note in NOTES:
        found.update(note(host=host, disks=disks))
    return found


# panel(pool=Pool) -> (template, its context) or None: a section later apps add to a pool's page (a forecast), drawn
# after the pool's own in the order the apps registered them.
PANELS: list[Callable[..., tuple[str, dict] | None]] = []


def pool_panel(panel: Callable[..., tuple[str, dict] | None]) -> Callable[..., tuple[str, dict] | None]:
    if panel not in PANELS:
        PANELS.append(panel)
    return panel


def panels_for(*, pool) -> list[tuple[str, dict]]:
    return [drawn for drawn in (panel(pool=pool) for panel in PANELS) if drawn]
