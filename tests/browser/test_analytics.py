"""In a real browser: the analytics page draws its charts from stored samples, a click on the SMB chart breaks it
down by client, the breakdown follows new samples live (htmx polling), a benchmark shows as a marker, and an open
alert rings the bell on the same page."""

from datetime import timedelta

import pytest
from django.utils import timezone

from analytics import series
from analytics.choices import RAW
from analytics.models import Alert, Sample, SamplerSetting, SamplerState
from benchmarks.models import Run
from tests.browser.conftest import login, nav_to, shot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def values(clients: dict[str, float]) -> dict[str, float]:
    row = {"smb||read_bps": sum(clients.values()), "smb||write_bps": 0, "cpu||busy_pct": 7.0, "arc||hit_pct": 96.0}
    row.update({f"smb_client|{c}|read_bps": v for c, v in clients.items()})
    return series.pack(row)


def labels(page, selector: str) -> list[str]:
    return page.eval_on_selector(selector, "c => Chart.getChart(c).data.datasets.map(d => d.label)")


def test_drill_down_by_client_follows_new_samples_and_rings_the_bell(page, local_host):
    SamplerSetting.objects.create(pk=1, interval=5)
    now = timezone.now()
    Sample.objects.bulk_create(
        Sample(
            host=local_host,
            at=now - timedelta(seconds=10 * i),
            step=RAW,
            values=values({"10.0.0.7": 50e6, "10.0.0.8": 20e6}),
        )
        for i in range(1, 90)
    )
    SamplerState.objects.create(host=local_host, at=now, counters={"round_trip_ms": 120, "cost_cpu_ms": 45})
    run = Run.objects.create(host=local_host, profile="seq-1m", title="Sequential 1M", target="tank")
    Run.objects.filter(pk=run.pk).update(created_at=now - timedelta(minutes=5))
    Alert.objects.create(
        host=local_host, rule="pool_state", subject="tank", level="critical", message="Pool tank on local is DEGRADED."
    )
    login(page)
    nav_to(page, "System", "Analytics")
    page.wait_for_selector("#card-smb canvas[data-drawn]")
    assert page.locator("#bell .count").inner_text() == "1"
    assert labels(page, "#card-smb canvas") == ["clients read", "clients wrote"]
    assert "45 ms per sample" in page.inner_text("#sampler-cost")
    assert f"Benchmark #{run.pk} Sequential 1M" in page.text_content("#markers")
    shot(page, "analytics-01-overview")

    page.click("#card-smb .chart-box")  # the Oracle-style drill-down: click the graph
    page.wait_for_url("**chart=smb&by=smb_client")
    page.wait_for_selector("#focus-smb canvas[data-drawn]")
    assert labels(page, "#focus-smb canvas") == ["10.0.0.7", "10.0.0.8"]
    table = page.inner_text("#breakdown").replace("\xa0", " ")
    assert table.startswith("Client") and "10.0.0.7\t47.7 MB/s" in table and "10.0.0.8\t19.1 MB/s" in table
    shot(page, "analytics-02-by-client")

    Sample.objects.create(
        host=local_host,
        at=timezone.now(),
        step=RAW,
        values=values({"10.0.0.7": 50e6, "10.0.0.8": 20e6, "10.0.0.9": 90e6}),
    )
    page.wait_for_function(
        "() => Chart.getChart(document.querySelector('#focus-smb canvas'))?.data.datasets.length === 3",
        timeout=15000,
    )  # the next poll (every 5 s while the page is visible) brought the new client
    assert labels(page, "#focus-smb canvas") == ["10.0.0.7", "10.0.0.8", "10.0.0.9"]  # by bytes in the range
    assert "10.0.0.9\t85.8" in page.inner_text("#breakdown").replace("\xa0", " ")
    page.click("#focus-smb a[data-by='smb_share']")
    page.wait_for_url("**by=smb_share")
    assert "Nothing to break down" in page.inner_text("#focus-smb")
