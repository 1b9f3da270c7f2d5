"""The dashboard's panels: later apps register what they add to the home page, so the core never imports them."""

from collections.abc import Callable

# panel(hosts=[Host, …]) -> context entries; "hosts" rows are (host, that host's pools) pairs; "extra_panels" are
# (template, its context) pairs, drawn after the hosts in the order the apps registered them
PANELS: list[Callable[..., dict]] = []


def dashboard_panel(panel: Callable[..., dict]) -> Callable[..., dict]:
    if panel not in PANELS:
        PANELS.append(panel)
    return panel


def dashboard_context(*, hosts) -> dict:
    context = {"hosts": [(host, []) for host in hosts]}
    extra = []
    for panel in PANELS:
        entries = panel(hosts=hosts)
        extra += entries.pop("extra_panels", [])
        context.update(entries)
    return {**context, "extra_panels": extra}
