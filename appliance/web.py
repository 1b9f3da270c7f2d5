"""What every app's pages share: the object's own host (the switcher follows it), and a service's refusal turned
into a message — on the next page (start_or_back, attempt), in one line (form_errors) or on the form's fields
(add_service_errors, start_on_form, saved_on_form: the page shows the form again, open) — and a safe way back
(safe_next); and who is asking (client_address)."""

from django import forms
from django.conf import settings
from django.contrib import messages
from django.core.exceptions import ValidationError
from django.shortcuts import get_object_or_404, redirect
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme

from appliance.selectors import host_current


def client_address(request) -> str | None:
    """The client's address, for the login limits and the audit: behind Tarn's HTTPS front (TARN_FRONT, the request
    on the web's Unix socket, where gunicorn gives no address) the one the front saw, which it puts in X-Real-IP in
    place of anything the client sent; else the connection's (a header on a TCP connection is anyone's to send)."""
    remote = request.META.get("REMOTE_ADDR") or ""
    if settings.TARN_FRONT and not remote:
        return request.META.get("HTTP_X_REAL_IP") or None
    return remote or None


def host_follow(request, host_id: int | None) -> None:
    """An object's page shows its own host: the switcher follows it, so the header, the lists one click away and
    what the page starts all name that host, whatever the switcher said. Never on an htmx request: a fragment
    polled in a background tab must not move the switcher under the tab the admin is working in."""
    if host_id is not None and not getattr(request, "htmx", False) and request.session.get("host_id") != host_id:
        request.session["host_id"] = host_id


def host_object(request, queryset, **lookup):
    """The object on whichever host has it (an id names one object, hence its host), the switcher following it;
    None when there is none. Who may read or change it is the view's role, as for any page."""
    obj = queryset.filter(**lookup).first()
    if obj is not None:
        host_follow(request, obj.host_id)
    return obj


def host_object_or_404(request, queryset, **lookup):
    """host_object, or 404 when there is none."""
    obj = get_object_or_404(queryset, **lookup)
    host_follow(request, obj.host_id)
    return obj


def start_or_back(request, start, back: str, **kwargs):
    """Start an operation through a service as the signed-in user, with kwargs (host=… for a service taking one):
    the operation's page, or on a refusal `back` (a URL or a URL name) with the reason as a message. Every page's
    button that starts an operation goes through here; a form kept open on a refusal goes through start_on_form."""
    op = attempt(request, start, user=request.user, **kwargs)
    return operation_page(op) if op else redirect(back)


def attempt(request, service, **kwargs):
    """Call a service; a refusal becomes a message on the next page (None returned) instead of an error page."""
    try:
        return service(**kwargs)
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
        return None


def start_on_form(form: forms.Form, start, **kwargs):
    """Start an operation through a service with a valid form's values: the operation's page, or None with the
    refusal on the form's fields, for the page to show the form again, open, the error under the field it names."""
    try:
        op = start(**kwargs)
    except ValidationError as exc:
        add_service_errors(form, exc)
        return None
    return operation_page(op)


def started_or_form(request, form: forms.Form, start, page, bound: str):
    """A posted form into a service starting an operation on the current host as the signed-in user: the operation's
    page, or page(request, status=400, **{bound: form}), the page again with that form open and each error under its
    field."""
    if form.is_valid():
        started = start_on_form(form, start, host=host_current(request), user=request.user, **form.cleaned_data)
        if started:
            return started
    return page(request, status=400, **{bound: form})


def saved_on_form(form: forms.Form, save, **kwargs) -> bool:
    """Pass a posted form's values (and kwargs) to a service whose result the page does not follow (a setting saved,
    a run begun): True, or False with the errors, the form's own or the service's, on its fields, for the page to
    show the form again, open."""
    if not form.is_valid():
        return False
    try:
        save(**kwargs, **form.cleaned_data)
    except ValidationError as exc:
        add_service_errors(form, exc)
        return False
    return True


def operation_page(op):
    """Where a page goes once it started an operation: the operation's own page, which follows it to its end."""
    return redirect("operation-detail", pk=op.pk)


def operation_href():
    """pk -> the path of an operation's page, the URL reversed once (for a page that links many: a list's rows)."""
    head, _, tail = reverse("operation-detail", args=[0]).rpartition("0")
    return lambda pk: f"{head}{int(pk)}{tail}"


def form_errors(form) -> str:
    return "; ".join(f"{k}: {' '.join(v)}" for k, v in form.errors.items())


def add_service_errors(form: forms.Form, exc: ValidationError) -> None:
    """Show a service's ValidationError on the form: on its field where it names one, else above the form."""
    if hasattr(exc, "error_dict"):
        for field, errors in exc.message_dict.items():
            for error in errors:
                form.add_error(field if field in form.fields else None, error)
    else:
        for error in exc.messages:
            form.add_error(None, error)


def safe_next(request, nxt: str | None, default: str) -> str:
    """Where to go back to: nxt only when it is a path on this site (never another origin), else default."""
    ok = nxt and nxt.startswith("/") and url_has_allowed_host_and_scheme(nxt, allowed_hosts={request.get_host()})
    return nxt if ok else default
