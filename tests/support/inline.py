"""Run a task the moment it is queued, in this process: an operation through the real queueing path (the message's
kwargs, a split secret included) into the runner registry; any other task (a sample, an alert's delivery) by calling
it. No worker and no broker. Patch it over app.send_task."""

from appliance.operations import OPERATION_TASK, operation_execute
from tarn.celery import app


def run_when_queued(name, args=None, kwargs=None, **_):
    if name == OPERATION_TASK:
        operation_execute(args[0], **kwargs)
    else:
        app.tasks[name](*(args or ()), **(kwargs or {}))
