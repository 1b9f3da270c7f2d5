"""Tasks only the tests load into a real worker (`celery worker --include tests.support.tasks`)."""

import time

from celery import shared_task

from appliance.host.errors import Busy
from appliance.operations import operation_tracking


@shared_task
def failing_operation(operation_id: int) -> None:
    with operation_tracking(operation_id) as tracker:
        if tracker:
            tracker.progress(30, "about to fail")
            raise Busy(["zpool", "export", "tank"], 1, "cannot export 'tank': pool is busy\n")


@shared_task
def slow_operation(operation_id: int) -> None:
    with operation_tracking(operation_id) as tracker:
        if tracker:
            tracker.progress(10, "sleeping")
            time.sleep(120)
