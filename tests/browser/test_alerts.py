"""In a real browser: an open alert rings the bell in the header; the bell opens the alerts page with it."""

import pytest

from analytics.models import Alert
from tests.browser.conftest import login, shot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_an_open_alert_shows_in_the_bell_and_on_the_alerts_page(page, local_host):
    Alert.objects.create(
        host=local_host, rule="pool_state", subject="tank", level="critical", message="Pool tank on local is DEGRADED."
    )
    login(page)
    assert page.locator("#bell .count").inner_text() == "1"
    page.click("#bell")
    page.wait_for_url("**/alerts/")
    row = page.locator("#open-alerts tbody tr").first
    assert "Pool not ONLINE" in row.inner_text() and "DEGRADED" in row.inner_text() and "Critical" in row.inner_text()
    shot(page, "alerts-01-bell")


def test_an_admin_changes_a_rules_threshold_in_the_table(page, local_host):
    login(page)
    page.goto("/alerts/")
    page.fill("input[aria-label='Pool filling threshold']", "70")
    page.select_option("select[aria-label='Pool filling level']", "critical")
    page.click("#rule-capacity_warning button")
    page.wait_for_url("**/alerts/")
    assert page.input_value("input[aria-label='Pool filling threshold']") == "70"
    assert page.input_value("select[aria-label='Pool filling level']") == "critical"
