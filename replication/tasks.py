"""Replication's runners are registered with the operation registry when the worker loads this module."""

import replication.services  # noqa: F401 - registers the replication.* runners
