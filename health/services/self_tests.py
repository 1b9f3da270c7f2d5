"""One disk's self-test: started or aborted as an operation (the drive runs it by itself; the reads follow it)."""

from django.core.exceptions import ValidationError
from django.utils import timezone

from appliance.models import Host, Operation
from appliance.operations import Tracker, operation_runner, operation_start
from health.choices import SelfTestKind
from health.models import DiskHealth
from health.services.reads import _store, judge_limits
from health.services.runs import _host_for_changes
from hostlib import smart


def self_test_start(*, host: Host | None, user, device: str, kind: str) -> Operation:
    """Start a short or long self-test on one disk: the drive runs it on its own; the health reads follow it."""
    host = _host_for_changes(host)
    row = DiskHealth.objects.filter(host=host, device=device).first()
    if row is None:
        raise ValidationError({"device": f"{host.name} has no disk {device} with SMART (read its health first)."})
    if kind not in SelfTestKind.values:
        raise ValidationError({"kind": f"Choose one of: {', '.join(SelfTestKind.values)}."})
    if kind not in row.self_test_kinds:
        raise ValidationError({"kind": f"{device} ({row.model or 'this drive'}) cannot run a {kind} self-test."})
    if row.testing is not None:
        raise ValidationError({"device": f"{device} is already running a self-test ({row.testing}% left)."})
    return operation_start(
        kind="health.self_test", host=host, user=user, subject=device, params={"device": device, "self_test": kind}
    )


def self_test_abort(*, host: Host | None, user, device: str) -> Operation:
    host = _host_for_changes(host)
    if not DiskHealth.objects.filter(host=host, device=device).exists():
        raise ValidationError({"device": f"{host.name} has no disk {device} with SMART."})
    return operation_start(
        kind="health.self_test_abort", host=host, user=user, subject=device, params={"device": device}
    )


@operation_runner("health.self_test", "health.self_test_abort", lock="disk")
def self_test_run(tracker: Tracker) -> None:
    op, params = tracker.op, tracker.op.params
    row = DiskHealth.objects.filter(host=op.host, device=params["device"]).first()
    if row is None:
        raise ValidationError({"device": f"{params['device']} is no longer on {op.host.name}."})
    t = tracker.transport()
    if op.kind == "health.self_test_abort":
        reading = smart.abort(t, row.device, row.dtype)
        done = f"Self-test on {row.device} aborted"
    else:
        tracker.progress(10, f"Starting a {params['self_test']} self-test on {row.device}")
        reading = smart.self_test(t, row.device, params["self_test"], row.dtype)
        done = f"{params['self_test'].capitalize()} self-test started on {row.device}: its progress shows on the disk's page"
    if reading.refused:
        raise ValidationError(f"smartctl on {row.device}: {'; '.join(reading.messages[-2:]) or 'it refused'}")
    _store(op.host, row, smart.read(t, row.device, row.dtype), row.dtype, {row.name}, judge_limits(), timezone.now())
    tracker.progress(100, done)
