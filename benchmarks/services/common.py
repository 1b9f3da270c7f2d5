"""What every kind of run shares: the manifest's host part, following a transient unit, ending a run (and, for a
scheduled run, checking it against the schedule's history)."""

import statistics
import time

from django.utils import timezone

from appliance.choices import RunStatus
from appliance.operations import Tracker, operation_start
from benchmarks.choices import DROP_HISTORY, HOST_EVERY, POLL_SECONDS
from benchmarks.models import Run
from hostlib import facts, systemd
from hostlib.errors import HostError
from hostlib.runner import Transport
from tuning.selectors import applied_titles, link_mtus


def manifest_common(t: Transport, run: Run, now: facts.Now | None = None) -> dict:
    """now: the host's kernel, zfs module and ARC as read already (else read here, in one command)."""
    if now is None:
        now = facts.now(t)
    return {
        "kernel": now.kernel,
        "openzfs": now.openzfs,
        "arc_c_max": now.arc.get("c_max"),
        "arc_size": now.arc.get("size"),
        "mtu": link_mtus(host=run.host),
        "tuning": applied_titles(host=run.host),
        "argv": [],
    }


BENCHMARK = "benchmark"  # the lock every run and suite of a host holds: one at a time per host, on its bench queue


def bench_operation(kind: str, host, user, params: dict, seconds: int | None = None):
    """An operation on the host's bench queue under the host's one benchmark target: one run (or suite) at a time
    per host, whatever its kind."""
    return operation_start(kind=kind, host=host, user=user, params=params, seconds=seconds)


def follow_unit(t: Transport, run: Run, unit: str, on_poll=None, expected: float = 0) -> bool:
    """Wait for a transient unit to end: True when it ended well, False when the run was cancelled (stopped).
    A cancel is looked for in the database at every poll; the host is asked (a command that takes CPU from what
    is measured) in the first seconds, every HOST_EVERY polls, and at every poll once the expected time is up."""
    polls, started = 0, time.monotonic()
    while True:
        left = expected - (time.monotonic() - started)
        # soon at first (short jobs), then every POLL_SECONDS, waking when the time is up, then every half second
        time.sleep(min(POLL_SECONDS, 0.25 * 2**polls, left if left > 0.1 else 0.5))
        polls += 1
        if Run.objects.filter(pk=run.pk, cancel_requested=True).exists():
            systemd.stop(t, unit)
            return False
        if polls <= 3 or polls % HOST_EVERY == 0 or time.monotonic() - started >= expected:
            state, result = systemd.service_state(t, unit)
            if state in ("inactive", "failed"):
                if result not in ("", "success"):
                    raise HostError(f"fio ended with {result}; see the host's journal for {unit}")
                return True
        if on_poll:
            on_poll(polls)


def cancelled(run: Run, tracker: Tracker) -> None:
    finish(run, RunStatus.CANCELLED, "Cancelled; its files are removed.")
    tracker.progress(100, run.message)


def begin(run: Run) -> None:
    """Its turn has come (its Operation runs a suite's runs one after another): it reads running from now."""
    run.started_at = timezone.now()
    Run.objects.filter(pk=run.pk).update(started_at=run.started_at)


def finish(run: Run, outcome: str, message: str) -> None:
    """The run's own end (succeeded, failed, cancelled), which its status reads before its Operation's."""
    run.outcome, run.message, run.finished_at = outcome, message[:1000], timezone.now()
    Run.objects.filter(pk=run.pk).update(
        outcome=outcome,
        message=run.message,
        finished_at=run.finished_at,
        progress=100 if outcome == RunStatus.SUCCEEDED else run.progress,
    )
    if outcome == RunStatus.SUCCEEDED and run.schedule_id:
        history_check(run)


def history_check(run: Run) -> str:
    """Flag a scheduled run whose bandwidth fell more than the schedule's threshold below the median of the same
    profile's previous scheduled runs (at least two of them)."""
    before = Run.objects.filter(
        schedule_id=run.schedule_id, profile=run.profile, outcome=RunStatus.SUCCEEDED, pk__lt=run.pk
    )
    previous = [r.bandwidth for r in before.order_by("-pk")[:DROP_HISTORY]]
    if len(previous) < 2 or not run.results:
        return ""
    median, now, threshold = statistics.median(previous), run.bandwidth, run.schedule.drop_percent
    if median and now < median * (1 - threshold / 100):
        run.flag = (
            f"{(1 - now / median) * 100:.0f}% below the median of the previous {len(previous)} runs "
            f"({now / 1e6:.1f} vs {median / 1e6:.1f} MB/s; threshold {threshold}%)."
        )
        Run.objects.filter(pk=run.pk).update(flag=run.flag)
    return run.flag
