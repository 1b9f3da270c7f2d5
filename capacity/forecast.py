"""When a pool or dataset will be full, from its capacity series: pure arithmetic, no Django.

The growth rate is a Theil–Sen slope (the median of the slopes between every pair of points), fitted after the
series' jumps are taken out: one big copy is one step up, and a step in the middle of 30 days would tilt even a median
of pair slopes (half the pairs straddle it). A jump is an increment between two neighbouring points far past what the
others show (past JUMP_MADS median absolute deviations of the increments and past MIN_JUMP of the total); what it added
stays in "used now", it just does not count as a trend. The slope's spread is Sen's rank interval (Kendall's variance):
the days to a level come as a most likely value with an earlier and a later bound."""

import math
from dataclasses import dataclass
from statistics import median

JUMP_MADS = 8.0  # an increment this many median absolute deviations past the median one is a jump, not growth
MIN_JUMP = 0.01  # …and at least this share of the total (no jumps found in the noise of a quiet dataset)
Z95 = 1.96
MAX_POINTS = 160  # a fit past this many points thins them first (the pairs grow as n²; 160 → 12,720 slopes)


@dataclass(frozen=True)
class Fit:
    """Growth in bytes per second (most likely, and a low and a high bound of ~95 %), over points spanning span
    seconds; jumps: the steps left out of the trend as (time, bytes)."""

    rate: float
    low: float
    high: float
    span: float
    points: int
    jumps: tuple[tuple[float, int], ...] = ()


def _thinned(points: list[tuple[float, int]]) -> list[tuple[float, int]]:
    if len(points) <= MAX_POINTS:
        return points
    step = (len(points) - 1) / (MAX_POINTS - 1)
    return [points[round(i * step)] for i in range(MAX_POINTS)]


def _without_jumps(points: list[tuple[float, int]], total: int) -> tuple[list[tuple[float, float]], list]:
    """The series with every jump taken out (the points after it lowered by it), and the jumps."""
    increments = [b[1] - a[1] for a, b in zip(points, points[1:], strict=False)]
    if len(increments) < 3:
        return [(t, float(u)) for t, u in points], []
    middle = median(increments)
    spread = median(abs(d - middle) for d in increments) or 0.0
    floor = max(JUMP_MADS * spread, MIN_JUMP * total)
    adjusted, lowered, jumps = [(points[0][0], float(points[0][1]))], 0.0, []
    for (t, used), step in zip(points[1:], increments, strict=True):
        if abs(step - middle) > floor:  # a copy in (or a big delete: a step down is no trend either)
            lowered += step - middle
            jumps.append((t, step))
        adjusted.append((t, used - lowered))
    return adjusted, jumps


def fit(points: list[tuple[float, int]], *, total: int) -> Fit | None:
    """points: (seconds, bytes used), oldest first; total: the size the share of a jump is measured against. None
    for fewer than three points or all at one time."""
    points = sorted(points)
    if len(points) < 3 or points[-1][0] <= points[0][0]:
        return None
    series, jumps = _without_jumps(_thinned(points), total)
    slopes = sorted((b[1] - a[1]) / (b[0] - a[0]) for i, a in enumerate(series) for b in series[i + 1 :] if b[0] > a[0])
    if not slopes:
        return None
    n, count = len(series), len(slopes)
    # Sen's interval: the ranks of the bounds around the median slope, from Kendall's S's variance (no ties)
    reach = Z95 * math.sqrt(n * (n - 1) * (2 * n + 5) / 18)
    low = slopes[max(0, math.floor((count - reach) / 2))]
    high = slopes[min(count - 1, math.ceil((count + reach) / 2))]
    return Fit(median(slopes), low, high, points[-1][0] - points[0][0], len(points), tuple(jumps))


def reach(used: int, target: int, rate: float, freed: list[tuple[float, int]] = (), horizon: float = math.inf):
    """Seconds from now until used reaches target growing at rate, less what freed gives back ((seconds from now,
    bytes), e.g. snapshots a schedule's retention will destroy): 0 if already there, None if never within horizon."""
    if used >= target:
        return 0.0
    if rate <= 0 and not freed:
        return None
    credit, start = 0, 0.0
    for when, amount in sorted(f for f in freed if f[0] >= 0):
        if when > horizon:
            break
        # before this credit comes, the level is reached at:
        if rate > 0:
            at = (target - used + credit) / rate
            if at <= when:
                return at if at <= horizon else None
        credit += amount
        start = when
    if rate <= 0:
        return None
    at = max((target - used + credit) / rate, start)
    return at if at <= horizon else None
