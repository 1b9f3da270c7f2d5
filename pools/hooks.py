"""Where later apps add to the pools app's disk pages (as appliance.dashboard does for the home page): a note per
disk (its health) in the disk list and on a pool's vdev tree, so the pools app never imports them. Registered from
the later app's AppConfig.ready()."""

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
