"""Writes for benchmarks: runs of storage profiles on datasets (runs), iperf3 between hosts (network), suites (a
profile × property matrix) and schedules (django-celery-beat)."""

from benchmarks.services.control import benchmark_again, benchmark_cancel
from benchmarks.services.network import benchmark_network_start
from benchmarks.services.profiles import profile_copy, profile_delete
from benchmarks.services.runs import benchmark_start
from benchmarks.services.schedules import schedule_delete, schedule_fire, schedule_save
from benchmarks.services.shares import benchmark_share_start
from benchmarks.services.suites import suite_start

__all__ = [
    "benchmark_again",
    "benchmark_cancel",
    "benchmark_network_start",
    "benchmark_share_start",
    "benchmark_start",
    "profile_copy",
    "profile_delete",
    "schedule_delete",
    "schedule_fire",
    "schedule_save",
    "suite_start",
]
