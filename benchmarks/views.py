"""Benchmark pages: start a run of a profile on a dataset, watch it, read its results and graphs."""

from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from appliance.selectors import host_current
from appliance.views import attempt
from benchmarks import selectors, services
from benchmarks.forms import RunForm
from benchmarks.models import Run
from benchmarks.profiles import PROFILES


@require_http_methods(["GET", "POST"])
def benchmark_list(request):
    host = host_current(request)
    form = RunForm(request.POST or None, datasets=selectors.run_targets(host=host) if host else ())
    if request.method == "POST" and form.is_valid():
        run = attempt(request, services.benchmark_start, host=host, user=request.user, **form.cleaned_data)
        if run:
            return redirect("benchmark-run", pk=run.pk)
    context = {"host": host, "form": form, "runs": selectors.run_list(host=host) if host else [],
               "profiles": selectors.storage_profiles()}  # fmt: skip
    return render(request, "benchmarks/run_list.html", context)


def benchmark_run(request, pk):
    run = get_object_or_404(Run.objects.select_related("host", "created_by"), pk=pk)
    context = {"run": run, "host": run.host, "profile": PROFILES.get(run.profile), "charts": selectors.run_charts(run),
               "warnings": selectors.run_warnings(run)}  # fmt: skip
    if request.htmx:
        response = render(request, "benchmarks/run_detail.html#run-status", context)
        if not run.is_active:
            response.status_code = 286  # htmx: stop polling
        return response
    return render(request, "benchmarks/run_detail.html", context)


@require_POST
def benchmark_cancel(request, pk):
    run = get_object_or_404(Run, pk=pk)
    attempt(request, services.benchmark_cancel, run=run, user=request.user)
    return redirect("benchmark-run", pk=run.pk)


@require_POST
def benchmark_again(request, pk):
    run = attempt(request, services.benchmark_again, run=get_object_or_404(Run, pk=pk), user=request.user)
    return redirect("benchmark-run", pk=run.pk) if run else redirect("benchmark-run", pk=pk)


def benchmark_compare(request):
    ids = [int(i) for i in request.GET.getlist("runs") if i.isdigit()]
    compared = selectors.run_compare(run_ids=ids, host=host_current(request))
    return render(request, "benchmarks/run_compare.html", {"host": host_current(request), **compared})
