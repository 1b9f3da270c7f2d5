"""Suites: profiles × the values of one scratch dataset property (sync standard vs always, a recordsize sweep), or
just a set of profiles (what a schedule fires), run one after another by one Operation and compared on one page."""

from django.core.exceptions import ValidationError
from django.db import transaction

from appliance.choices import RunStatus
from appliance.models import Host
from appliance.operations import Tracker, operation_runner
from benchmarks.choices import PROPERTIES
from benchmarks.models import Run, Suite
from benchmarks.selectors import storage_profile
from benchmarks.services.common import BENCHMARK, bench_operation, finish
from benchmarks.services.runs import benchmark_start, duration, execute_storage
from hostlib.errors import HostError

MAX_RUNS = 24


def suite_start(
    *,
    host: Host,
    user,
    profiles: list[str],
    dataset: str,
    prop: str = "",
    values: list[str] = (),
    size: str = "",
    runtime: int = 0,
    ramp: int | None = None,
    cache_ok: bool = False,
    schedule=None,
    title: str = "",
) -> Suite:
    """Every run is checked as a single run would be (profile, target, size, ARC) before anything is queued."""
    if not profiles or any(storage_profile(p) is None for p in profiles):
        raise ValidationError({"profiles": "Choose one or more storage profiles."})
    values = list(dict.fromkeys(values))
    if prop and (prop not in PROPERTIES or len(values) < 2):
        raise ValidationError({"values": f"Choose two or more values of {prop or 'a property'} to sweep."})
    if len(profiles) * max(len(values), 1) > MAX_RUNS:
        raise ValidationError({"profiles": f"At most {MAX_RUNS} runs in one suite."})
    swept = [{prop: v} for v in values] if prop else [{}]
    sweep = f" × {prop} {', '.join(values)}" if prop else ""
    with transaction.atomic():
        suite = Suite.objects.create(
            host=host,
            title=title or f"{', '.join(profiles)}{sweep}"[:200],
            target=dataset,
            profiles=list(profiles),
            prop=prop,
            values=values,
            schedule=schedule,
            created_by=user,
        )
        for profile in profiles:
            for properties in swept:
                benchmark_start(
                    host=host,
                    user=user,
                    profile=profile,
                    dataset=dataset,
                    size=size,
                    runtime=runtime,
                    ramp=ramp,
                    properties=properties,
                    cache_ok=cache_ok,
                    suite=suite,
                    schedule=schedule,
                    queue=False,
                )
        suite.operation = bench_operation(
            "benchmarks.suite", host, user, {"suite": suite.pk}, sum(duration(r.jobs) for r in suite.runs.all())
        )
        suite.save(update_fields=["operation"])
        suite.runs.update(operation=suite.operation)
    return suite


@operation_runner("benchmarks.suite", lock=BENCHMARK, queue="bench")
def benchmark_suite_run(tracker: Tracker) -> None:
    """Each run in turn; a failed run does not stop the others, a cancelled one stops the rest."""
    suite = Suite.objects.get(pk=tracker.op.params["suite"])
    runs = list(suite.runs.select_related("host", "schedule").order_by("pk"))
    for n, run in enumerate(runs):
        run.refresh_from_db(fields=["outcome", "cancel_requested"])
        if run.cancel_requested:
            finish(run, RunStatus.CANCELLED, "Cancelled before it started.")
            continue
        tracker.log(f"Run {n + 1} of {len(runs)}: {run.title} {run.properties or ''}")
        try:
            execute_storage(run, tracker)
        except HostError as exc:
            tracker.log(f"Run {run.pk} failed: {exc}")
    done = Run.objects.filter(suite=suite, outcome=RunStatus.SUCCEEDED).count()
    tracker.progress(100, f"{done} of {len(runs)} runs succeeded.")
