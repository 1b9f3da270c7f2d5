"""The UPS page: its state (as read every minute), a day's chart, the policy, and the form (an admin's: it decides
when the NAS powers off)."""

from django.shortcuts import render
from django.views.decorators.debug import sensitive_post_parameters
from django.views.decorators.http import require_GET, require_POST

from appliance.auth import requires
from appliance.choices import Role
from appliance.selectors import host_current
from appliance.web import start_or_back, started_or_form
from ups import selectors, services
from ups.forms import UpsForm


def _page(request, status=200, ups_form=None):
    host = host_current(request)
    ups = selectors.ups_of(host=host)
    fields = ("name", "mode", "driver", "port", "listen", "server", "policy", "seconds")
    initial = {f: getattr(ups, f) for f in fields} if ups else None
    context = {
        "host": host,
        "ups": ups,
        "chart": selectors.chart(ups=ups) if ups else None,
        "warning": selectors.runtime_warning(ups=ups) if ups else "",
        "ups_form": ups_form or UpsForm(host=host, initial=initial),
        "can_admin": request.user.has_role(Role.ADMIN),
    }
    return render(request, "ups/ups_page.html", context, status=status)


@require_GET
def ups_page(request):
    return _page(request)


@requires(write=Role.ADMIN)
@sensitive_post_parameters("password")
@require_POST
def ups_save(request):
    form = UpsForm(request.POST, host=host_current(request))
    return started_or_form(request, form, services.ups_save_start, _page, "ups_form")


@requires(write=Role.ADMIN)
@require_POST
def ups_remove(request):
    host = host_current(request)
    return start_or_back(
        request, services.ups_remove_start, "ups-page", host=host, confirm=request.POST.get("confirm", "")
    )
