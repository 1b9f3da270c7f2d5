"""In a real browser, over rows (no host is reached): the dashboard's replication panel leads to a task's page, whose
restore form names a bad field and keeps what was typed."""

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from pools.models import Dataset, Snapshot
from replication.models import Pair, Task
from tests.browser.conftest import login, shot
from tests.replication.test_services import ended_run, host_with

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_dashboard_leads_to_a_task_whose_restore_form_names_a_bad_field(page, local_host):
    source = host_with("nas1", "tank", "tank/docs", snapshots={"tank/docs": ("auto-1",)})
    target = host_with("nas2", "backup", "backup/lab", "backup/lab/docs", snapshots={"backup/lab/docs": ("auto-1",)})
    pair = Pair.objects.create(source=source, target=target, address="10.78.0.2", root="backup/lab", status="paired")
    task = Task.objects.create(pair=pair, source_dataset="tank/docs", target_name="docs")
    ended_run(task, "succeeded", sent=12 << 20, message="Sent 12 MiB")
    task.datasets.create(
        source="tank/docs",
        target="backup/lab/docs",
        snapshot="auto-1",
        guid="7",
        snapshot_created_at=timezone.now(),
        replicated_at=timezone.now(),
    )
    assert Dataset.objects.filter(name="backup/lab/docs").exists() and Snapshot.objects.exists()
    login(page)
    page.click(f"#replication a[href$='/replication/tasks/{task.pk}/']")
    page.wait_for_url(f"**/replication/tasks/{task.pk}/")
    assert "Sent 12 MiB" in page.inner_text("body")
    page.select_option("select[name='snapshot']", "backup/lab/docs@auto-1")
    page.fill("input[name='name']", "backup/lab")
    page.click("form[action$='/restore/'] button")
    expect(page.locator("body")).to_contain_text("backup/lab exists already")
    assert page.input_value("input[name='name']") == "backup/lab", "what was typed stays"
    shot(page, "replication-01-restore")
