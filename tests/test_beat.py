"""Every beat entry and every task resolves at import and runs (here with no hosts; against the lab in
tests/lab/test_inventory.py): a missing name fails this test, not the 5-minute refresh at 3 a.m."""

import importlib

import pytest
from django.conf import settings

from appliance.models import Host, Operation
from appliance.operations import OPERATION_TASK
from tarn.celery import app
from tests.support.apps import ROOT, product_apps

TASK_MODULES = sorted(f"{app}.tasks" for app in product_apps() if (ROOT / app / "tasks.py").exists())


MODULES = [importlib.import_module(name) for name in TASK_MODULES]  # a name that is gone fails right here


def test_every_app_with_tasks_is_found():
    assert {"appliance.tasks", "pools.tasks"} <= set(TASK_MODULES)


def test_every_beat_entry_names_a_registered_task():
    registered = set(app.tasks)
    missing = [entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values() if entry["task"] not in registered]
    assert not missing
    assert OPERATION_TASK in registered


@pytest.mark.django_db
def test_every_beat_entry_runs_with_no_hosts():
    Host.objects.all().delete()
    for entry in settings.CELERY_BEAT_SCHEDULE.values():
        result = app.tasks[entry["task"]].apply()
        assert result.successful(), (entry["task"], result.traceback)
    assert not Operation.objects.exists()
