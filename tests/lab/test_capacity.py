"""The forecast back-tested on a real pool: a 1 GiB file vdev (compression off: zeros take their space) filled at a
known rate (50 MiB a step, one 160 MiB copy early on), each step read by the inventory refresh (the pool's part) and
recorded by Tarn; a step stands for eight hours (the bytes are ZFS's own accounting, the clock is compressed: a
forecast wants two days of history). At half-way, the forecast of when it reaches 80 % is checked against when it
did: within 10 %. (80 %, not 90: ZFS keeps 128 MiB of any pool back, an eighth of this one.)"""

from datetime import timedelta

import pytest
from django.utils import timezone

from capacity import services
from capacity.models import CapacityPoint
from pools.models import Pool
from pools.services import Scope, inventory_refresh

pytestmark = pytest.mark.lab

STEP_MIB = 50
COPY_MIB = 160
HOURS = 8  # a step


def test_a_pool_filling_at_a_known_rate_is_forecast_within_ten_percent_at_half_way(guest, lab_host):
    guest.sh("truncate -s 1G /var/tmp/fill.img && zpool create -f -O compression=off tank /var/tmp/fill.img")
    inventory_refresh(host=lab_host)
    start = timezone.now().replace(microsecond=0)

    def step(n: int) -> float:
        guest.sh("zpool sync tank")
        inventory_refresh(host=lab_host, scope=Scope(pools=["tank"]))
        Pool.objects.filter(host=lab_host).update(observed_at=start + timedelta(hours=n * HOURS))  # the clock
        services.capacity_record(host=lab_host)
        pool = Pool.objects.get(host=lab_host, name="tank")
        return pool.allocated / pool.size

    n, forecast, half, reached = 0, None, None, None
    used = step(n)
    while n < 30:
        n, before = n + 1, used
        extra = COPY_MIB if n == 3 else 0  # one big copy: a step, not a trend
        guest.sh(f"dd if=/dev/zero of=/tank/f{n} bs=1M count={STEP_MIB + extra} status=none")
        used = step(n)
        if forecast is None and used >= 0.5:
            half = n
            made = services.capacity_forecast(host=lab_host, now=start + timedelta(hours=n * HOURS))
            [forecast] = [f for f in made if not f.dataset]
            assert forecast.state == "growing" and forecast.jumps >= 1, forecast.__dict__
        if used >= 0.8:
            reached = n - 1 + (0.8 - before) / (used - before)  # between the two reads, as the bytes grew
            break
    assert forecast is not None and reached is not None, (n, used)
    predicted, actual = forecast.days_80 * 24, (reached - half) * HOURS
    print(f"forecast at step {half} ({forecast.percent:.0f} % used, {forecast.per_day / 24 / 2**20:.1f} MiB an "
          f"hour): 80 % in {predicted:.1f} h; reached in {actual:.1f} h")  # fmt: skip
    # the rate is a step's bytes as ZFS counts them (the data and its metadata)
    assert forecast.per_day / 24 * HOURS == pytest.approx(STEP_MIB << 20, rel=0.15)
    assert abs(predicted - actual) <= 0.1 * actual, (predicted, actual)
    assert CapacityPoint.objects.filter(host=lab_host, dataset="").count() == n + 1
