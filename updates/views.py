"""The updates page (admins only): the current host's pending packages, security ones, kernels and ZFS marked, the
guard's verdict for each kernel that would boot, and the buttons to check and to install."""

from django.shortcuts import render
from django.views.decorators.http import require_GET, require_POST

from appliance.auth import requires
from appliance.choices import Role
from appliance.selectors import host_current
from appliance.web import start_or_back
from updates import selectors, services

ADMIN = {"write": Role.ADMIN, "read": Role.ADMIN}


@requires(**ADMIN)
@require_GET
def updates_page(request):
    host = host_current(request)
    row = selectors.host_updates(host)
    pending = (
        sorted(row.pending, key=lambda p: (not p["kernel"], not p["zfs"], not p["security"], p["name"])) if row else []
    )
    return render(
        request,
        "updates/updates_page.html",
        {"host": host, "row": row, "pending": pending, "operations": selectors.recent_operations(host)},
    )


@requires(**ADMIN)
@require_POST
def updates_check(request):
    return start_or_back(request, services.updates_check_start, "updates-page", host=host_current(request))


@requires(**ADMIN)
@require_POST
def updates_apply(request):
    return start_or_back(request, services.updates_apply_start, "updates-page", host=host_current(request))
