"""Runners only the tests register, loaded into a real worker with `celery worker --include tests.support.runners`."""

import time

from appliance.operations import operation_runner
from hostlib.errors import Busy


@operation_runner("test.fail")
def failing_operation(tracker) -> None:
    tracker.progress(30, "about to fail")
    raise Busy(["zpool", "export", "tank"], 1, "cannot export 'tank': pool is busy\n")


@operation_runner("test.slow")
def slow_operation(tracker) -> None:
    tracker.progress(10, "sleeping")
    time.sleep(120)
