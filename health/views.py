"""Disk health pages: every disk's state, one disk's SMART data, temperature and self-tests."""

from django.contrib import messages
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from appliance.choices import Role
from appliance.selectors import host_current
from appliance.web import host_object_or_404, saved_on_form, start_or_back
from health import selectors, services
from health.choices import HealthState
from health.forms import RunForm, ScheduleForm, SelfTestForm
from pools import selectors as pools


def health_list(request, **bound):
    """Every disk's health, the self-test runs and schedules; `bound` holds a form posted and refused (run_form or
    schedule_form), shown again with each error under its field (400)."""
    host = host_current(request)
    return render(
        request,
        "health/health_list.html",
        {
            "host": host,
            "disks": selectors.labelled(selectors.disks_read(host=host)) if host else [],
            "last": selectors.health_pass(host=host) if host else None,
            "can_run": request.user.has_role(Role.OPERATOR),
            "runs": selectors.runs(host=host) if host else [],
            "schedules": selectors.schedules(host=host) if host else [],
            "run_form": RunForm(),
            "schedule_form": ScheduleForm(),
            **bound,
        },
        status=400 if bound else 200,
    )


@require_POST
def run_new(request):
    said = "Self-tests started: one disk per vdev at a time."
    return _saved(request, RunForm(request.POST), "run_form", said, services.self_test_run_start, user=request.user)


@require_POST
def run_cancel(request, pk):
    run = get_object_or_404(selectors.runs(host=host_current(request), limit=0), pk=pk)
    return start_or_back(request, services.self_test_run_cancel, "health-list", run=run)


@require_POST
def schedule_new(request):
    return _saved(request, ScheduleForm(request.POST), "schedule_form", "Schedule saved.", services.schedule_save)


def _saved(request, form, name: str, done: str, service, **extra):
    """A form of the list page into a service for the current host: `done` said on the list page, or the form shown
    again there (`name`) with its errors, its own or the service's, each under its field."""
    if saved_on_form(form, service, host=host_current(request), **extra):
        messages.success(request, done)
        return redirect("health-list")
    return health_list(request, **{name: form})


@require_POST
def schedule_delete(request, pk):
    services.schedule_delete(schedule=get_object_or_404(selectors.schedules(host=host_current(request)), pk=pk))
    messages.success(request, "Schedule deleted.")
    return redirect("health-list")


@require_POST
def health_read(request):
    return start_or_back(request, services.health_read_start, "health-list", host=host_current(request))


def disk_detail(request, pk):
    disk = host_object_or_404(request, selectors.disks_all(), pk=pk)  # from the dashboard: any host's disk
    host = disk.host
    failing = disk.state == HealthState.FAILING
    return render(
        request,
        "health/disk_detail.html",
        {
            "host": host,
            "disk": selectors.labelled([disk])[0],
            "vdev": pools.disk_vdev(host=host, name=disk.name),
            "chart": selectors.temperature_chart(disk=disk),
            "form": SelfTestForm(),
            "can_run": request.user.has_role(Role.OPERATOR),
            "can_replace": failing and request.user.has_role(Role.ADMIN),
        },
    )


@require_POST
def self_test(request, pk):
    disk = host_object_or_404(request, selectors.disks_all(), pk=pk)
    host = disk.host
    form = SelfTestForm(request.POST)
    kind = form.cleaned_data["kind"] if form.is_valid() else request.POST.get("kind", "")
    back = reverse("health-disk", args=[pk])
    return start_or_back(request, services.self_test_start, back, host=host, device=disk.device, kind=kind)


@require_POST
def self_test_abort(request, pk):
    disk = host_object_or_404(request, selectors.disks_all(), pk=pk)
    host = disk.host
    back = reverse("health-disk", args=[pk])
    return start_or_back(request, services.self_test_abort, back, host=host, device=disk.device)
