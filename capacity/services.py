"""The capacity series and forecasts: points recorded from the inventory (nothing is asked of a host: the pools'
refresh already reads what is used), forecasts remade from them, old points dropped. Tarn's own bookkeeping, like
the sampler's series: no Operation (nothing on a host changes)."""

from collections import defaultdict
from datetime import timedelta

from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from capacity import forecast
from capacity.choices import (
    FIT_DAYS,
    HORIZON_DAYS,
    KEEP_DAYS,
    LEVELS,
    MIN_HISTORY_HOURS,
    MIN_POINTS,
    POINT_SECONDS,
    ForecastState,
)
from capacity.models import CapacityPoint, Forecast
from pools.selectors import capacity_now, snapshot_expiries

DAY = 86400.0


def capacity_record(*, host) -> int:
    """A point for each pool and dataset of the host whose inventory was read since its last point and at least
    POINT_SECONDS after it (the refresh runs every 5 minutes; an hour between points is plenty for a trend of days);
    how many were recorded."""
    last = _last_points(host)
    gap = timedelta(seconds=POINT_SECONDS)
    new = [
        CapacityPoint(host=host, pool=pool, dataset=dataset, at=at, used=used, total=total)
        for pool, dataset, used, total, at in capacity_now(host=host)
        if total > 0 and at is not None and (last.get((pool, dataset)) is None or at >= last[(pool, dataset)] + gap)
    ]
    CapacityPoint.objects.bulk_create(new, batch_size=500)
    return len(new)


def _last_points(host) -> dict[tuple[str, str], object]:
    rows = CapacityPoint.objects.filter(host=host).values("pool", "dataset").annotate(last=Max("at"))
    return {(r["pool"], r["dataset"]): r["last"] for r in rows}


def capacity_forecast(*, host, now=None) -> list[Forecast]:
    """Every pool's and dataset's forecast from its last FIT_DAYS of points, made again and stored (one transaction:
    a page never reads half of them)."""
    now = now or timezone.now()
    series: dict[tuple[str, str], list[tuple[float, int, int]]] = defaultdict(list)
    since = now - timedelta(days=FIT_DAYS)
    points = CapacityPoint.objects.filter(host=host, at__gte=since).order_by("at")
    for pool, dataset, at, used, total in points.values_list("pool", "dataset", "at", "used", "total").iterator():
        series[(pool, dataset)].append((at.timestamp(), used, total))
    freed = _freed(host, now)
    made = [
        _forecast(host, pool, dataset, rows, freed.get((pool, dataset), []), now)
        for (pool, dataset), rows in series.items()
    ]
    with transaction.atomic():
        Forecast.objects.filter(host=host).delete()
        Forecast.objects.bulk_create(made, batch_size=500)
    return made


def _freed(host, now) -> dict[tuple[str, str], list[tuple[float, int]]]:
    """What the snapshot schedules will destroy within the horizon, as (seconds from now, bytes) for the snapshot's
    dataset, every dataset above it and its pool. A snapshot's used is what it alone holds (and in usable bytes, where
    a pool's are raw): at least what its destruction frees, so the forecast errs early."""
    until = now + timedelta(days=HORIZON_DAYS)
    freed: dict[tuple[str, str], list[tuple[float, int]]] = defaultdict(list)
    for dataset, when, used in snapshot_expiries(host=host, now=now, until=until):
        if used <= 0:
            continue
        credit = ((when - now).total_seconds(), used)
        parts = dataset.split("/")
        freed[(parts[0], "")].append(credit)
        for depth in range(1, len(parts) + 1):
            freed[(parts[0], "/".join(parts[:depth]))].append(credit)
    return freed


def _forecast(host, pool: str, dataset: str, rows: list[tuple[float, int, int]], freed, now) -> Forecast:
    used, total = rows[-1][1], rows[-1][2]
    history = (rows[-1][0] - rows[0][0]) / DAY
    row = Forecast(host=host, pool=pool, dataset=dataset, computed_at=now, used=used, total=total,
                   points=len(rows), history_days=history)  # fmt: skip
    found = forecast.fit([(t, u) for t, u, _ in rows], total=total)
    if found is None or history * 24 < MIN_HISTORY_HOURS or len(rows) < MIN_POINTS:
        row.state = ForecastState.LEARNING
        return row
    row.per_day, row.per_day_low, row.per_day_high = found.rate * DAY, found.low * DAY, found.high * DAY
    row.jumps = len(found.jumps)
    row.freed = sum(amount for _, amount in freed)
    horizon = HORIZON_DAYS * DAY
    since = now.timestamp() - rows[-1][0]  # the last point's age: the trend runs from it, the days count from now
    freed = [(seconds + since, amount) for seconds, amount in freed]

    def days(level: int, rate: float):
        left = forecast.reach(used, total * level // 100, rate, freed, horizon + since)
        return None if left is None else max(left - since, 0.0) / DAY

    row.days_80, row.days_90, row.days_100 = (days(level, found.rate) for level in LEVELS)
    row.soonest, row.latest = days(100, found.high), days(100, found.low)
    row.state = ForecastState.GROWING if found.rate > 0 else ForecastState.FLAT
    return row


def capacity_prune(*, now=None) -> int:
    now = now or timezone.now()
    deleted, _ = CapacityPoint.objects.filter(at__lt=now - timedelta(days=KEEP_DAYS)).delete()
    return deleted


def capacity_update(*, host, now=None) -> list[Forecast]:
    """The hourly step for one host: record, then forecast."""
    capacity_record(host=host)
    return capacity_forecast(host=host, now=now)
