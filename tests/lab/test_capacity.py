"""The forecast back-tested on a real pool: a 512 MiB file vdev filled at a known rate (24 MiB of random data a step,
one 64 MiB copy early on), each step read by the inventory refresh and recorded by Tarn; a step stands for six hours
(the bytes are ZFS's own accounting, the clock is compressed: a forecast wants two days of history). At half-way, the
forecast of the hour it reaches 90 % is checked against the hour it did: within 10 %."""

from datetime import timedelta

import pytest
from django.utils import timezone

from capacity import services
from capacity.models import CapacityPoint
from pools.models import Pool
from pools.services import inventory_refresh

pytestmark = pytest.mark.lab

STEP_MIB = 24
COPY_MIB = 64
HOURS = 6  # a step


def test_a_pool_filling_at_a_known_rate_is_forecast_within_ten_percent_at_half_way(guest, lab_host):
    guest.sh("truncate -s 512M /var/tmp/fill.img && zpool create -f -O compression=off tank /var/tmp/fill.img")
    start = timezone.now().replace(microsecond=0)

    def step(hour: int) -> float:
        guest.sh("zpool sync tank")
        inventory_refresh(host=lab_host)
        at = start + timedelta(hours=hour * HOURS)
        Pool.objects.filter(host=lab_host).update(observed_at=at)  # the compressed clock
        services.capacity_record(host=lab_host)
        pool = Pool.objects.get(host=lab_host, name="tank")
        return pool.allocated / pool.size

    hour, forecast, half = 0, None, None
    reached = None
    used = step(hour)
    while hour < 60:
        hour, before = hour + 1, used
        extra = COPY_MIB if hour == 4 else 0  # one big copy: a step, not a trend
        guest.sh(f"head -c {(STEP_MIB + extra) << 20} /dev/urandom > /tank/f{hour}")
        used = step(hour)
        if forecast is None and used >= 0.5:
            half = hour
            [forecast] = [f for f in services.capacity_forecast(host=lab_host, now=start + timedelta(hours=hour * HOURS))
                          if not f.dataset]  # fmt: skip
            assert forecast.state == "growing" and forecast.jumps >= 1, forecast.__dict__
        if used >= 0.9:
            reached = hour - 1 + (0.9 - before) / (used - before)  # between the two reads, as the bytes grew
            break
    assert forecast is not None and reached is not None, (hour, used)
    predicted, actual = forecast.days_90 * 24, (reached - half) * HOURS
    print(f"forecast at step {half} ({100 * forecast.used / forecast.total:.0f} % used, "
          f"{forecast.per_day / 24 / 2**20:.1f} MiB an hour): 90 % in {predicted:.1f} h; reached in {actual:.1f} h")  # fmt: skip
    # the rate is a step's bytes as ZFS counts them (the data and its metadata)
    assert forecast.per_day / 24 * HOURS == pytest.approx(STEP_MIB << 20, rel=0.15)
    assert abs(predicted - actual) <= 0.1 * actual, (predicted, actual)
    assert CapacityPoint.objects.filter(host=lab_host, dataset="").count() == hour + 1
