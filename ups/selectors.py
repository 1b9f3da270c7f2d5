"""What the UPS page, its alerts and other apps read."""

from datetime import timedelta

from django.utils import timezone

from ups.choices import CHART_HOURS
from ups.models import Ups


def ups_of(*, host):
    return Ups.objects.filter(host=host).first() if host else None


def chart(*, ups) -> dict:
    """The chart's spec (static/js/charts.js): charge and load (%) and the runtime left (minutes), the last day."""
    since = timezone.now() - timedelta(hours=CHART_HOURS)
    rows = list(ups.readings.filter(at__gte=since).values_list("at", "charge", "runtime", "load"))
    rows = rows[:: max(1, len(rows) // 360)]  # at most ~360 points
    series = [
        ("Charge %", [c for _, c, _, _ in rows], "#16a34a"),
        ("Runtime (min)", [round(r / 60, 1) if r is not None else None for _, _, r, _ in rows], "#2563eb"),
        ("Load %", [lo for *_, lo in rows], "#b45309"),
    ]
    return {
        "type": "line",
        "labels": [f"{timezone.localtime(at):%H:%M}" for at, *_ in rows],
        "datasets": [
            {"label": label, "data": data, "borderColor": colour, "pointRadius": 0} for label, data, colour in series
        ]
        if rows
        else [],  # fmt: skip
    }


def runtime_warning(*, ups) -> str:
    """A shutdown delay longer than the battery lasts (as last read): said, not refused."""
    if ups.policy == "after_seconds" and ups.runtime and ups.seconds >= ups.runtime:
        return (
            f"The shutdown waits {ups.seconds} s on battery, but the UPS said it has {ups.runtime:.0f} s of "
            "runtime: the power may go before the NAS shuts down. Shorten the delay, or shut down at low battery."
        )
    return ""
