"""The certificates page (admins only): the certificate in use, whether browsers trust it (HSTS), and one to import
in its place."""

from django.conf import settings
from django.contrib import messages
from django.http import Http404, HttpResponse
from django.http.request import split_domain_port
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from appliance.auth import requires
from appliance.auth.fresh import fresh_factor
from appliance.choices import Role
from appliance.web import start_on_form, start_or_back
from certificates import selectors, services
from certificates.forms import AcmeForm, ImportForm, RequestForm, TrustForm

ADMIN = {"write": Role.ADMIN, "read": Role.ADMIN}


def _page(request, status=200, import_form=None, request_form=None, acme_form=None):
    current = selectors.certificate_current()
    host = split_domain_port(request.get_host())[0].strip("[]")
    context = {
        "current": current,
        "request_pem": selectors.request_pem(),
        "request_form": request_form or RequestForm(initial={"names": " ".join(current.names) if current else host}),
        "state": selectors.front_state(),
        "front": settings.TARN_FRONT,
        "operations": selectors.recent_operations(),
        "import_form": import_form or ImportForm(initial={"name": host}),
        "acme": (acme := selectors.acme_setting()),
        "acme_form": acme_form or AcmeForm(initial=_acme_initial(acme, host)),
    }
    return render(request, "certificates/certificate_page.html", context, status=status)


def _acme_initial(acme, host: str) -> dict:
    if acme is None:
        return {"names": host}
    return {"directory": acme.directory, "names": " ".join(acme.names), "email": acme.email, "roots": acme.roots}


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
def certificate_request(request):
    form = RequestForm(request.POST)
    if form.is_valid():
        started = start_on_form(form, services.certificate_request_start, user=request.user, **form.cleaned_data)
        if started:
            return started
    return _page(request, status=400, request_form=form)


@requires(**ADMIN)
@require_GET
def certificate_request_download(request):
    pem = selectors.request_pem()
    if pem is None:
        raise Http404("No request: make one on the Certificates page.")
    response = HttpResponse(pem, content_type="application/pkcs10")
    response["Content-Disposition"] = 'attachment; filename="tarn.csr"'
    return response


@requires(**ADMIN)
@require_POST
@fresh_factor  # HSTS on makes a certificate browsers do not trust a wall for a year
def certificate_trust(request):
    form = TrustForm(request.POST)
    form.is_valid()  # a checkbox: always valid, absent is off
    trusted = form.cleaned_data["trusted"]
    return start_or_back(request, services.certificate_trust_start, "certificate-page", trusted=trusted)


@requires(**ADMIN)
@require_POST
@fresh_factor  # what every browser will be shown as Tarn
def certificate_acme(request):
    form = AcmeForm(request.POST)
    if form.is_valid():
        started = start_on_form(form, services.acme_start, user=request.user, **form.values())
        if started:
            return started
    return _page(request, status=400, acme_form=form)


@requires(**ADMIN)
@require_POST
@fresh_factor  # without renewals the certificate runs out
def certificate_acme_stop(request):
    if services.acme_stop(user=request.user):
        messages.success(request, "ACME renewals stopped: the certificate in use stays until it runs out.")
    return redirect("certificate-page")
