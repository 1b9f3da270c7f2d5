"""The forecast's arithmetic: a steady growth is found, one big copy does not tilt it, noise widens the bounds, and the
days to a level count what retention will free."""

import random

import pytest

from capacity.forecast import fit, reach

DAY = 86400
GIB = 1 << 30
TOTAL = 1000 * GIB


def steady(days=30, per_day=10 * GIB, start=100 * GIB, every_hours=1, noise=0.0, seed=1):
    rng = random.Random(seed)
    hours = range(0, days * 24, every_hours)
    return [(h * 3600.0, int(start + per_day * h / 24 + rng.gauss(0, noise))) for h in hours]


def test_a_steady_growth_is_found_with_a_tight_interval():
    found = fit(steady(), total=TOTAL)
    assert found.rate * DAY == pytest.approx(10 * GIB, rel=1e-6)
    assert found.low <= found.rate <= found.high and (found.high - found.low) * DAY < 0.01 * GIB
    assert found.points == 720 and found.span == pytest.approx(719 * 3600) and found.jumps == ()


def test_one_big_copy_in_the_middle_does_not_tilt_the_trend():
    points = steady()
    copied = [(t, u + (200 * GIB if t >= 15 * DAY else 0)) for t, u in points]
    found = fit(copied, total=TOTAL)
    assert found.rate * DAY == pytest.approx(10 * GIB, rel=0.02), found.rate * DAY / GIB
    assert len(found.jumps) == 1 and found.jumps[0][1] > 190 * GIB
    # a plain median of pair slopes would have said far more: half the pairs straddle the copy
    naive = sorted((b[1] - a[1]) / (b[0] - a[0]) for i, a in enumerate(copied[::6]) for b in copied[::6][i + 1 :])
    assert naive[len(naive) // 2] * DAY > 14 * GIB


def test_noise_widens_the_bounds_around_the_same_rate():
    found = fit(steady(noise=3 * GIB), total=TOTAL)
    assert found.rate * DAY == pytest.approx(10 * GIB, rel=0.05)
    assert found.low < found.rate < found.high and (found.high - found.low) * DAY > 0.05 * GIB and found.jumps == ()


def test_too_few_points_or_no_time_gives_no_forecast():
    assert fit([(0, 1), (60, 2)], total=TOTAL) is None
    assert fit([(5, 1), (5, 2), (5, 3)], total=TOTAL) is None


def test_days_to_a_level_count_what_retention_frees():
    rate = 10 * GIB / DAY
    assert reach(500 * GIB, 800 * GIB, rate) == pytest.approx(30 * DAY)
    assert reach(900 * GIB, 800 * GIB, rate) == 0.0
    assert reach(500 * GIB, 800 * GIB, 0.0) is None and reach(500 * GIB, 800 * GIB, -rate) is None
    # 50 GiB of snapshots expire on day 10: five days later
    assert reach(500 * GIB, 800 * GIB, rate, [(10 * DAY, 50 * GIB)]) == pytest.approx(35 * DAY)
    # what expires after the level is reached changes nothing
    assert reach(500 * GIB, 800 * GIB, rate, [(40 * DAY, 50 * GIB)]) == pytest.approx(30 * DAY)
    assert reach(500 * GIB, 800 * GIB, rate, horizon=20 * DAY) is None
