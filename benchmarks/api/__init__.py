"""Benchmarks: fio and network runs, profiles, suites, schedules and comparisons."""
