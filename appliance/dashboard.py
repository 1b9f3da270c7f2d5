"""The dashboard's panels: later apps register what they add to the home page, so the core never imports them."""

from collections.abc import Callable

from appliance.kept import kept_a_moment

# panel(hosts=[Host, …]) -> context entries; "hosts" rows are (host, that host's pools) pairs; "extra_panels" are
# (template, its context) pairs, drawn after the hosts in the order the apps registered them. Each panel with the
# role a user needs to see it (None: everyone signed in), as the pages it links to are guarded.
PANELS: list[tuple[Callable[..., dict], str | None]] = []


def dashboard_panel(panel: Callable[..., dict], *, role: str | None = None) -> Callable[..., dict]:
    if all(known is not panel for known, _ in PANELS):
        PANELS.append((panel, role))
    return panel


def dashboard_context(*, hosts, user) -> dict:
    """The panels this user may see for these hosts. Each panel is a query or three; with 50 people reloading the home
    page the panels were 4/5 of its cost, so they are kept for TARN_DASHBOARD_SECONDS (2) per set of panels and hosts:
    what two users with the same panels see is the same, and a user never gets a panel their role would not show."""
    visible = [(panel, role) for panel, role in PANELS if not role or user.has_role(role)]
    which = "{}:{}".format(
        ",".join(f"{p.__module__}.{p.__qualname__}" for p, _ in visible), ",".join(str(h.pk) for h in hosts)
    )
    return kept_a_moment("dashboard", which, lambda: _panels(visible, hosts))


def _panels(visible, hosts) -> dict:
    context = {"hosts": [(host, []) for host in hosts]}
    extra = []
    for panel, _ in visible:
        entries = panel(hosts=hosts)
        extra += entries.pop("extra_panels", [])
        context.update(entries)
    return {**context, "extra_panels": extra}
