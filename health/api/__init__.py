"""Disk health: SMART reads of every disk, self-tests and their schedules."""
