"""HTML views for the appliance app: login, dashboard, hosts, operations, audit, API tokens."""

from django.contrib import messages
from django.contrib.auth import login, update_session_auth_hash
from django.contrib.auth.decorators import login_not_required
from django.contrib.auth.forms import PasswordChangeForm
from django.contrib.staticfiles import finders
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.http import FileResponse, HttpResponse, QueryDict
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.cache import cache_control
from django.views.decorators.http import require_GET, require_http_methods, require_POST, require_safe

from appliance import selectors, services, twofactor, twofactor_views
from appliance.auth import requires
from appliance.auth.fresh import is_fresh, mark_fresh
from appliance.choices import OperationStatus, Role
from appliance.connect import ssh_dir
from appliance.dashboard import dashboard_context
from appliance.fleet import fleet_view
from appliance.forms import ApiTokenForm, AuditFilterForm, HostForm, LoginForm
from appliance.models import Host, Operation
from appliance.web import add_service_errors, client_address, host_follow, safe_next, start_or_back
from hostlib.digits import whole_number
from hostlib.keys import public_key

FLEET_PAGE = 50


@login_not_required
@require_http_methods(["GET", "POST"])
def login_view(request):
    form = LoginForm(request, data=request.POST or None)
    if request.method == "POST":
        username = request.POST.get("username", "")
        if not services.login_attempt_allowed(username=username, address=client_address(request)):
            form.add_error(None, "Too many failed logins. Wait a few minutes and try again.")
            return render(request, "appliance/login.html", {"form": form}, status=429)
        if form.is_valid():
            user, nxt = form.get_user(), safe_next(request, request.GET.get("next"), "/")
            if twofactor.has_second_factor(user):  # the password is right; the second step signs in
                return twofactor_views.begin_second_step(request, user, nxt)
            login(request, user)
            mark_fresh(request)  # the password, just typed: what a user without a second factor confirms with
            services.login_succeeded(username=username, address=client_address(request))
            return redirect(nxt)
    return render(request, "appliance/login.html", {"form": form})


def dashboard(request):
    context = dashboard_context(hosts=selectors.host_list(request), user=request.user)
    return render(request, "appliance/dashboard.html", {**context, "operations": selectors.operation_recent(limit=8)})


def host_list(request):
    return render(request, "appliance/host_list.html", {"hosts": selectors.host_list(request)})


@require_GET
def fleet(request):
    """Every host at a glance: a row per host, a column per app (appliance.fleet), searched by name, sorted by any
    column, the hosts needing attention alone if asked, 50 a page."""
    q = request.GET.get("q", "").strip()[:40]
    order = request.GET.get("order", "")[:40]
    attention = request.GET.get("attention") == "1"
    every = selectors.host_list(request)
    columns, rows = fleet_view(hosts=every, user=request.user, q=q, order=order, attention=attention)
    page = Paginator(rows, FLEET_PAGE).get_page(request.GET.get("page"))
    query = QueryDict(mutable=True)
    query.update({k: v for k, v in (("q", q), ("order", order), ("attention", "1" if attention else "")) if v})
    context = {"columns": columns, "page": page, "q": q, "order": order, "attention": attention,
               "query": query.urlencode(), "total": len(every)}  # fmt: skip
    return render(request, "appliance/fleet.html", context)


def host_detail(request, pk):
    host = get_object_or_404(Host, pk=pk)
    return render(
        request,
        "appliance/host_detail.html",
        {"host": host, "operations": selectors.operation_recent(host=host, limit=10)},
    )


@requires(write=Role.ADMIN, read=Role.ADMIN)
@require_http_methods(["GET", "POST"])
def host_add(request):
    form = HostForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            host = services.host_create(**form.cleaned_data, user=request.user)
        except ValidationError as exc:
            add_service_errors(form, exc)
        else:
            messages.success(request, f"Added {host.name}; reading what it has.")
            return redirect("host-detail", pk=host.pk)
    return render(request, "appliance/host_form.html", {"form": form, "public_key": public_key(ssh_dir())})


@requires(write=Role.ADMIN, read=Role.ADMIN)
@require_POST
def host_remove(request, pk):
    host = get_object_or_404(Host, pk=pk)
    try:
        services.host_remove(host=host, confirm=request.POST.get("confirm", ""), user=request.user)
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
        return redirect("host-detail", pk=host.pk)
    messages.success(request, f"Removed {host.name} from Tarn; nothing on it was changed.")
    return redirect("host-list")


@require_POST
def host_probe(request, pk):
    host = get_object_or_404(Host, pk=pk)
    return start_or_back(request, services.host_probe_start, reverse("host-detail", args=[host.pk]), host=host)


@requires(write=Role.VIEWER)
@require_POST
def host_switch(request):
    """To the host chosen from the menu (its id) or typed into the search a fleet has (its name)."""
    name = request.POST.get("host_name", "").strip()[:40]
    host_id = whole_number(request.POST.get("host", ""))
    host = Host.objects.filter(name=name).first() if name else None
    if host is None and host_id is None:
        messages.error(request, f"No host is named {name}: pick one from the list." if name else "Choose a host.")
        return redirect(safe_next(request, request.POST.get("next"), "dashboard"))
    host = host or get_object_or_404(Host, pk=host_id)
    request.session["host_id"] = host.pk
    return redirect(safe_next(request, request.POST.get("next"), "dashboard"))


def _cursor(request, name: str) -> int | None:
    return whole_number(request.GET.get(name, ""))


def _query_without_cursors(request) -> str:
    query = request.GET.copy()
    for name in ("before", "after", "page"):
        query.pop(name, None)
    return query.urlencode()


def operation_list(request):
    page = selectors.operation_page(
        before=_cursor(request, "before"), after=_cursor(request, "after"), status=request.GET.get("status", "")
    )
    return render(
        request,
        "appliance/operation_list.html",
        {"page": page, "statuses": OperationStatus.choices, "query": _query_without_cursors(request)},
    )


def operation_detail(request, pk):
    op = get_object_or_404(Operation.objects.select_related("host", "user"), pk=pk)
    host_follow(request, op.host_id)
    template = "appliance/operation_detail.html"
    if request.htmx:
        template += "#operation-status"
    response = render(request, template, {"op": op})
    if request.htmx and not op.is_active:
        response.status_code = 286  # htmx stops polling
    return response


def audit_list(request):
    form = AuditFilterForm(request.GET or None)
    filters = form.cleaned_data if form.is_valid() else {}
    page = selectors.audit_page(before=_cursor(request, "before"), after=_cursor(request, "after"), **filters)
    context = {
        "form": form,
        "page": page,
        "query": _query_without_cursors(request),
        "window": selectors.SEARCH_WINDOW,
        "show_params": request.user.has_role(Role.ADMIN),  # parameters are for admins (README: Audit)
    }
    return render(request, "appliance/audit_list.html", context)


@requires(write=Role.VIEWER)
@require_http_methods(["GET", "POST"])
def password_change(request):
    """Every user changes their own password (the old one first; the rules of AUTH_PASSWORD_VALIDATORS)."""
    form = PasswordChangeForm(request.user, request.POST or None)
    if request.method == "POST" and form.is_valid():
        update_session_auth_hash(request, form.save())  # this session stays logged in
        messages.success(request, "Password changed.")
        return redirect("dashboard")
    return render(request, "appliance/password_change.html", {"form": form})


@requires(write=Role.VIEWER)
@require_http_methods(["GET", "POST"])
def token_list(request):
    form = ApiTokenForm(request.POST or None)
    new_key = None
    if request.method == "POST" and not is_fresh(request):
        form.add_error(
            None, "Making a token needs a fresh second factor (your password if you have none): confirm it first."
        )
    elif request.method == "POST" and form.is_valid():
        _, new_key = services.api_token_create(user=request.user, name=form.cleaned_data["name"])
        form = ApiTokenForm()
    tokens = request.user.api_tokens.all()
    return render(request, "appliance/token_list.html", {"form": form, "tokens": tokens, "new_key": new_key})


@requires(write=Role.VIEWER)
@require_POST
def token_revoke(request, pk):
    services.api_token_revoke(user=request.user, token_id=pk)
    messages.success(request, "Token revoked.")
    return redirect("token-list")


@login_not_required
def healthz(request):
    return HttpResponse("ok", content_type="text/plain")


@login_not_required
@require_safe
@cache_control(max_age=86400, public=True)
def favicon(request):
    """/favicon.ico, where browsers and bookmarks look without asking the page: Tarn's icon (an SVG), no login."""
    return FileResponse(open(finders.find("favicon.svg"), "rb"), content_type="image/svg+xml")  # noqa: SIM115
