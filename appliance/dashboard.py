"""The dashboard's panels: later apps register what they add to the home page, so the core never imports them."""

from collections.abc import Callable

# panel(hosts=[Host, …]) -> context entries; "hosts" rows are (host, that host's pools) pairs; "extra_panels" are
# (template, its context) pairs, drawn after the hosts in the order the apps registered them. Each panel with the
# role a user needs to see it (None: everyone signed in), as the pages it links to are guarded.
PANELS: list[tuple[Callable[..., dict], str | None]] = []


def dashboard_panel(panel: Callable[..., dict], *, role: str | None = None) -> Callable[..., dict]:
    if all(known is not panel for known, _ in PANELS):
        PANELS.append((panel, role))
    return panel


def dashboard_context(*, hosts, user) -> dict:
    context = {"hosts": [(host, []) for host in hosts]}
    extra = []
    for panel, role in PANELS:
        if role and not user.has_role(role):
            continue
        entries = panel(hosts=hosts)
        extra += entries.pop("extra_panels", [])
        context.update(entries)
    return {**context, "extra_panels": extra}
