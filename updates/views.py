"""The updates page (admins only): the current host's pending packages, security ones, kernels and ZFS marked, the
guard's verdict for each kernel that would boot, and the buttons to check, to install and to reboot."""

from django.shortcuts import render
from django.views.decorators.http import require_GET, require_POST

from appliance.auth import requires
from appliance.choices import Role
from appliance.selectors import host_current
from appliance.web import start_on_form, start_or_back
from updates import selectors, services
from updates.forms import RebootForm, RolloutForm

ADMIN = {"write": Role.ADMIN, "read": Role.ADMIN}


def _page(request, reboot_form=None, rollout_form=None):
    host = host_current(request)
    row = selectors.host_updates(host)
    order = lambda p: (not p["kernel"], not p["zfs"], not p["security"], p["name"])  # noqa: E731
    context = {
        "host": host,
        "row": row,
        "pending": sorted(row.pending, key=order) if row else [],
        "operations": selectors.recent_operations(host),
        "reboot_form": reboot_form or RebootForm(),
        "rollout_form": rollout_form or RolloutForm(),
        "checked": selectors.checked_hosts(),
    }
    status = 400 if reboot_form or rollout_form else 200
    return render(request, "updates/updates_page.html", context, status=status)


@requires(**ADMIN)
@require_GET
def updates_page(request):
    return _page(request)


@requires(**ADMIN)
@require_POST
def updates_check(request):
    return start_or_back(request, services.updates_check_start, "updates-page", host=host_current(request))


@requires(**ADMIN)
@require_POST
def updates_apply(request):
    return start_or_back(request, services.updates_apply_start, "updates-page", host=host_current(request))


@requires(**ADMIN)
@require_POST
def updates_reboot(request):
    form = RebootForm(request.POST)
    if form.is_valid():
        started = start_on_form(
            form, services.updates_reboot_start, host=host_current(request), user=request.user, **form.cleaned_data
        )
        if started:
            return started
    return _page(request, reboot_form=form)


@requires(**ADMIN)
@require_POST
def updates_rollout(request):
    form = RolloutForm(request.POST)
    if form.is_valid():
        started = start_on_form(
            form, services.updates_rollout_start, user=request.user, hosts=list(form.cleaned_data["hosts"])
        )
        if started:
            return started
    return _page(request, rollout_form=form)
