"""Writes for disk health, by noun: reads (a host's health pass, as an operation, and the hosts due one), one disk's
self-test, runs (every disk, group after group) and their schedules. What other modules use is here."""

from health.services.reads import (
    health_due,
    health_poll_due,
    health_read,
    health_read_run,
    health_read_start,
    judge_limits,
    temperatures_prune,
)
from health.services.runs import (
    run_groups,
    runs_advance,
    self_test_cancel_run,
    self_test_run_cancel,
    self_test_run_start,
)
from health.services.schedules import schedule_delete, schedule_save, schedules_run_due
from health.services.self_tests import self_test_abort, self_test_run, self_test_start

__all__ = [
    "health_due",
    "health_poll_due",
    "health_read",
    "health_read_run",
    "health_read_start",
    "judge_limits",
    "run_groups",
    "runs_advance",
    "schedule_delete",
    "schedule_save",
    "schedules_run_due",
    "self_test_abort",
    "self_test_cancel_run",
    "self_test_run",
    "self_test_run_cancel",
    "self_test_run_start",
    "self_test_start",
    "temperatures_prune",
]
