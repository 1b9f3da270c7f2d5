"""Reads for tuning: links, the settings Tarn keeps and how they compare with the host, change sets."""

from dataclasses import dataclass

from appliance.charts import chart, series
from appliance.models import Host
from shares.selectors import share_server_values
from tuning.choices import ChangeStatus, SettingKind
from tuning.models import ChangeSet, KernelState, Link, Setting
from tuning.profiles import PROFILES


def host_addresses(host: Host) -> list[str]:
    """The host's global addresses on its links, as last read (no prefix length)."""
    return [c.split("/")[0] for link in Link.objects.filter(host=host).exclude(kind="loopback") for c in link.cidrs]


@dataclass(frozen=True)
class Drift:
    setting: Setting
    observed: str | None  # None: the setting is gone from the host


def tuning_overview(*, host: Host) -> dict:
    state = KernelState.objects.filter(host=host).first()
    active = list(Setting.objects.filter(host=host, active=True).select_related("change_set"))
    return {
        "links": list(Link.objects.filter(host=host)),
        "kernel_state": state,
        "active_settings": active,
        "drift": tuning_drift(host=host, state=state, active=active),
        "changes": list(ChangeSet.objects.filter(host=host).select_related("created_by")[:20]),
        "pending": ChangeSet.objects.filter(host=host, status=ChangeStatus.PENDING).first(),
        "profiles": list(PROFILES.values()),
    }


def tuning_drift(*, host: Host, state: KernelState | None = None, active=None) -> list[Drift]:
    """Settings Tarn applied that the host no longer has (changed by hand, lost at a reboot), as last read."""
    state = state or KernelState.objects.filter(host=host).first()
    if state is None:
        return []
    active = active if active is not None else Setting.objects.filter(host=host, active=True)
    drift, server = [], share_server_values(host=host)
    for s in active:
        observed = server.get(s.key) if s.kind == SettingKind.SERVICE else state.values(s.kind).get(s.key)
        if observed != s.value:
            drift.append(Drift(s, observed))
    return drift


def effect_chart(change_set: ChangeSet) -> dict:
    """Chart data for the measured effect: Mbit/s before and after, per direction."""
    labels = {"to_host": "to the host", "from_host": "from the host"}
    directions = [d for d in labels if d in (change_set.before or {}) and d in (change_set.after or {})]
    return chart(
        "bar",
        unit="Mbit/s",
        labels=[labels[d] for d in directions],
        datasets=[
            series(label, [round(getattr_bps(side, d) / 1e6, 1) for d in directions])
            for label, side in (("before", change_set.before), ("after", change_set.after))
        ],
    )


def getattr_bps(side: dict, direction: str) -> float:
    return float((side or {}).get(direction, {}).get("bps", 0))


def change_detail(*, change_set: ChangeSet) -> dict:
    settings = list(change_set.settings.all())
    return {
        "chart": effect_chart(change_set),
        "settings": settings,
        "to_change": sum(s.action == "set" for s in settings),
        "peers": Host.objects.exclude(pk=change_set.host_id).order_by("name"),
        "addresses": [  # data links first: a measurement over the management link says little about clients
            (c.split("/")[0], f"{c.split('/')[0]} ({link.name}{', management' if link.management else ''})")
            for link in Link.objects.filter(host=change_set.host).order_by("management", "name")
            for c in link.cidrs
            if link.kind != "loopback"
        ],
    }


def link_counters() -> list[tuple[int, str, dict]]:
    """Every host's links but loopback, as (host id, name, counters last read)."""
    links = Link.objects.exclude(kind="loopback").only("host_id", "name", "counters")
    return [(link.host_id, link.name, link.counters) for link in links]


def arc_by_host() -> dict[int, dict]:
    """The ARC's figures (arcstats) each host had when last read, by host id."""
    return {state.host_id: state.arc or {} for state in KernelState.objects.only("host_id", "arc")}


def change_sets_since(*, host: Host, since) -> list[ChangeSet]:
    """The host's tuning change sets made since then (for markers on charts)."""
    return list(ChangeSet.objects.filter(host=host, created_at__gte=since).only("pk", "title", "created_at"))


def host_arc(*, host: Host) -> dict:
    """The host's ARC figures (arcstats) as last read, {} before the first read."""
    return KernelState.objects.filter(host=host).values_list("arc", flat=True).first() or {}


def link_mtus(*, host: Host) -> dict[str, int]:
    """Each link's MTU (but loopback's) as last read."""
    return {link.name: link.mtu for link in Link.objects.filter(host=host).exclude(kind="loopback")}


def applied_titles(*, host: Host) -> list[str]:
    """Titles of the host's change sets now in effect (applied or kept)."""
    live = ChangeSet.objects.filter(host=host, status__in=[ChangeStatus.APPLIED, ChangeStatus.KEPT])
    return list(live.values_list("title", flat=True))
