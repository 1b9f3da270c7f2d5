"""The certificates page (admins only): the certificate in use, whether browsers trust it (HSTS), and one to import
in its place."""

from django.conf import settings
from django.http.request import split_domain_port
from django.shortcuts import render
from django.views.decorators.http import require_GET, require_POST

from appliance.auth import requires
from appliance.auth.fresh import fresh_factor
from appliance.choices import Role
from appliance.web import start_on_form
from certificates import selectors, services
from certificates.forms import ImportForm, TrustForm

ADMIN = {"write": Role.ADMIN, "read": Role.ADMIN}


def _page(request, status=200, import_form=None):
    context = {
        "current": selectors.certificate_current(),
        "state": selectors.front_state(),
        "front": settings.TARN_FRONT,
        "operations": selectors.recent_operations(),
        "import_form": import_form
        or ImportForm(initial={"name": split_domain_port(request.get_host())[0].strip("[]")}),
    }
    return render(request, "certificates/certificate_page.html", context, status=status)


@requires(**ADMIN)
@require_GET
def certificate_page(request):
    return _page(request)


@requires(**ADMIN)
@require_POST
@fresh_factor  # what every browser will be shown as Tarn
def certificate_import(request):
    form = ImportForm(request.POST, request.FILES)
    if form.is_valid():
        started = start_on_form(form, services.certificate_import_start, user=request.user, **form.values())
        if started:
            return started
    return _page(request, status=400, import_form=form.without_key())


@requires(**ADMIN)
@require_POST
@fresh_factor  # HSTS on makes a certificate browsers do not trust a wall for a year
def certificate_trust(request):
    form = TrustForm(request.POST)
    form.is_valid()
    return start_on_form(
        form, services.certificate_trust_start, user=request.user, trusted=form.cleaned_data["trusted"]
    )
