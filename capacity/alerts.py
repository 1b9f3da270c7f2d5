"""The forecast's alert, asked at every evaluation from the forecasts as last made (nothing is asked of the host): a
pool forecast full within the admin's number of days. Registered with analytics from CapacityConfig.ready(); cleared
when a forecast no longer says so (space freed, the growth slowed, a vdev added)."""

from django.template.defaultfilters import filesizeformat

from analytics.choices import Level, Rule
from analytics.hooks import alert_source
from capacity import selectors

FULL_SOON = Rule(
    "capacity_forecast_full",
    "Pool forecast full",
    Level.WARNING,
    30,
    "days",
    1,
    365,
    "A pool whose growth over the last 30 days (one big copy left out) fills it within this many days.",
)


@alert_source(FULL_SOON)
def forecast_conditions(*, host, now, active):
    if FULL_SOON.key not in active:
        return
    for row in selectors.full_within(host=host, days=active[FULL_SOON.key].threshold):
        between = f"between {row.soonest:.0f} and {row.latest:.0f} days" if row.latest is not None else "or later"
        yield (
            FULL_SOON.key,
            f"pool {row.pool}",
            f"{host.name}: pool {row.pool} ({row.percent:.0f} % used) is forecast full in {row.days_100:.0f} days "
            f"({between}) at {filesizeformat(row.per_day)} a day.",
        )
