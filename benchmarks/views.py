"""Benchmark pages: start a run (storage, network) or a suite, watch it, read its results and graphs, compare runs,
download results; schedules with their history."""

import csv

from django.contrib import messages
from django.http import HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from appliance.auth import requires
from appliance.choices import Role
from appliance.kept import kept_a_moment
from appliance.models import Host
from appliance.selectors import host_current
from appliance.web import attempt, host_object_or_404
from benchmarks import selectors, services
from benchmarks.forms import NetworkForm, ProfileForm, RunForm, ScheduleForm, SuiteForm
from benchmarks.models import CustomProfile, Run, Schedule, Suite
from hostlib.digits import whole_number


def _choices(host) -> tuple:
    """The start forms' choices on host: its mounted filesystems, the peers ((id, name)) and its addresses, its
    writable shares, the profiles."""
    if not host:
        return (), (), (), (), selectors.profile_choices()
    peers, addresses = selectors.network_choices(host=host)
    shares = selectors.share_targets(host=host)
    return selectors.run_targets(host=host), peers, addresses, shares, selectors.profile_choices()


def _forms(request, host, posted: str = ""):
    """The page's three start forms; the one posted is bound. Their choices (six reads) are kept a moment for a page
    shown (appliance.kept: 50 people reloading it), read afresh for a form posted."""
    if posted:
        choices = _choices(host)
    else:
        choices = kept_a_moment("benchmarks:choices", str(host.pk if host else ""), lambda: _choices(host))
    datasets, peers, addresses, shares, profiles = choices
    data = request.POST if request.method == "POST" else None
    return {
        "form": RunForm(data if posted == "run" else None, datasets=datasets, shares=shares, profiles=profiles),
        "suite_form": SuiteForm(
            data if posted == "suite" else None, datasets=datasets, profiles=profiles, prefix="suite"
        ),
        "network_form": NetworkForm(
            data if posted == "network" else None, peers=peers, addresses=addresses, prefix="net"
        ),
    }


@require_http_methods(["GET", "POST"])
def benchmark_list(request):
    host = host_current(request)
    posted = request.POST.get("start", "") if request.method == "POST" else ""
    forms = _forms(request, host, posted)
    if posted == "run" and forms["form"].is_valid():
        if run := attempt(request, _start_run, host=host, user=request.user, **forms["form"].cleaned_data):
            return redirect("benchmark-run", pk=run.pk)
    if posted == "suite" and forms["suite_form"].is_valid():
        data = forms["suite_form"].cleaned_data
        if suite := attempt(request, services.suite_start, host=host, user=request.user, **data):
            return redirect("benchmark-suite", pk=suite.pk)
    if posted == "network" and forms["network_form"].is_valid():
        data = dict(forms["network_form"].cleaned_data)
        data["peer"] = Host.objects.filter(pk=data["peer"]).first()
        if run := attempt(request, services.benchmark_network_start, host=host, user=request.user, **data):
            return redirect("benchmark-run", pk=run.pk)
    context = {
        "host": host,
        **forms,
        "runs": selectors.run_page(host=host, page=request.GET.get("page")) if host else [],
        "suites": selectors.suite_list(host=host) if host else [],
        "profiles": selectors.storage_profiles(),
        "network_profiles": selectors.network_profiles(),
    }
    return render(request, "benchmarks/run_list.html", context)


def _start_run(*, host, user, target: dict, **data):
    if target["kind"] == "dataset":
        return services.benchmark_start(host=host, user=user, dataset=target["name"], **data)
    return services.benchmark_share_start(host=host, user=user, protocol=target["kind"], share=target["name"], **data)


def benchmark_run(request, pk):
    run = host_object_or_404(
        request, Run.objects.select_related("host", "created_by", "peer", "suite", "operation"), pk=pk
    )
    # ended, but its operation still holds the host's benchmark target (removing the scratch dataset, or a suite's
    # next runs): Run again would be refused until it ends, so the page keeps polling and offers it then
    settling = not run.is_active and run.operation is not None and run.operation.is_active
    context = {
        "run": run,
        "host": run.host,
        "profile": selectors.profile_get(run.profile),
        "charts": selectors.run_charts(run),
        "warnings": selectors.run_warnings(run),
        "settling": settling,
    }
    if request.htmx:
        response = render(request, "benchmarks/run_detail.html#run-status", context)
        if not run.is_active and not settling:
            response.status_code = 286  # htmx: stop polling
        return response
    return render(request, "benchmarks/run_detail.html", context)


def benchmark_results(request, pk, fmt):
    """A run's results as CSV (one row per job and direction) or JSON (the run with its manifest and series)."""
    run = get_object_or_404(Run, pk=pk)
    name = f"tarn-run-{run.pk}-{run.profile}"
    if fmt == "json":
        data = {
            "id": run.pk,
            "host": run.host.name,
            "kind": run.kind,
            "profile": run.profile,
            "title": run.title,
            "target": run.target,
            "properties": run.properties,
            "status": run.status,
            "jobs": run.jobs,
            "results": run.results,
            "series": run.series,
            "manifest": run.manifest,
            "created_at": run.created_at.isoformat(),
        }
        response = JsonResponse(data, json_dumps_params={"indent": 1})
    else:
        response = HttpResponse(content_type="text/csv; charset=utf-8")
        csv.writer(response).writerows(selectors.results_rows(run))
    response["Content-Disposition"] = f'attachment; filename="{name}.{fmt}"'
    return response


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
    ids = [n for n in map(whole_number, request.GET.getlist("runs")) if n is not None]
    compared = selectors.run_compare(run_ids=ids, host=host_current(request))
    return render(request, "benchmarks/run_compare.html", {"host": host_current(request), **compared})


def benchmark_suite(request, pk):
    suite = host_object_or_404(request, Suite.objects.select_related("host", "schedule"), pk=pk)
    context = {"host": suite.host, **selectors.suite_detail(suite)}
    if request.htmx:
        response = render(request, "benchmarks/suite_detail.html#suite-runs", context)
        response.status_code = 200 if context["active_run"] else 286
        return response
    return render(request, "benchmarks/suite_detail.html", context)


@require_http_methods(["GET", "POST"])
def schedule_list(request):
    host = host_current(request)
    form = ScheduleForm(
        request.POST or None,
        datasets=selectors.run_targets(host=host) if host else (),
        profiles=selectors.profile_choices(),
    )
    if request.method == "POST" and form.is_valid():
        data = dict(form.cleaned_data)
        data["target"] = data.pop("dataset")
        if schedule := attempt(request, services.schedule_save, host=host, user=request.user, data=data):
            return redirect("benchmark-schedule", pk=schedule.pk)
    context = {"host": host, "form": form, "schedules": selectors.schedule_list(host=host) if host else []}
    return render(request, "benchmarks/schedule_list.html", context)


@require_http_methods(["GET", "POST"])
def schedule_detail(request, pk):
    schedule = host_object_or_404(request, Schedule.objects.select_related("host", "task"), pk=pk)
    initial = {
        **{
            f: getattr(schedule, f)
            for f in (
                "name",
                "profiles",
                "size",
                "runtime",
                "cache_ok",
                "minute",
                "hour",
                "day_of_week",
                "drop_percent",
                "enabled",
            )
        },
        "dataset": schedule.target,
    }
    datasets = selectors.run_targets(host=schedule.host)
    form = ScheduleForm(request.POST or None, initial=initial, datasets=datasets, profiles=selectors.profile_choices())
    if request.method == "POST" and form.is_valid():
        data = dict(form.cleaned_data)
        data["target"] = data.pop("dataset")
        if attempt(request, services.schedule_save, host=schedule.host, user=request.user, data=data, pk=schedule.pk):
            return redirect("benchmark-schedule", pk=schedule.pk)
    history = selectors.schedule_history(schedule)
    context = {"host": schedule.host, "schedule": schedule, "form": form, "history": history}
    return render(request, "benchmarks/schedule_detail.html", context)


@require_POST
def schedule_delete(request, pk):
    schedule = get_object_or_404(Schedule, pk=pk)
    confirm = request.POST.get("confirm", "")
    if not attempt(request, services.schedule_delete, schedule=schedule, user=request.user, confirm=confirm):
        return redirect("benchmark-schedule", pk=pk)
    return redirect("benchmark-schedules")


def profile_list(request):
    context = {
        "host": host_current(request),
        "profiles": selectors.storage_profiles(),
        "network_profiles": selectors.network_profiles(),
        "custom": list(CustomProfile.objects.all()),
    }
    return render(request, "benchmarks/profile_list.html", context)


@requires(read=Role.ADMIN, write=Role.ADMIN)  # the README: Copy makes an admin's profile
@require_http_methods(["GET", "POST"])
def profile_copy(request):
    original = selectors.profile_get(request.GET.get("from", ""))
    if original is None or not original.jobs:
        messages.error(request, "Choose a storage profile to copy.")
        return profile_list(request)
    job = original.jobs[0]
    initial = {
        **{k: getattr(job, k) for k in ProfileForm.JOB},
        "title": f"{original.title} (copy)",
        "represents": original.represents,
        "recordsize": original.properties.get("recordsize", ""),
        "dataset_sync": original.properties.get("sync", ""),
    }
    form = ProfileForm(request.POST or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        if attempt(request, services.profile_copy, user=request.user, based_on=original.key, **form.split()):
            return redirect("benchmark-profiles")
    context = {"host": host_current(request), "form": form, "original": original}
    return render(request, "benchmarks/profile_copy.html", context)


@requires(write=Role.ADMIN)
@require_POST
def profile_delete(request, pk):
    profile = get_object_or_404(CustomProfile, pk=pk)
    attempt(
        request, services.profile_delete, profile=profile, user=request.user, confirm=request.POST.get("confirm", "")
    )
    return redirect("benchmark-profiles")
