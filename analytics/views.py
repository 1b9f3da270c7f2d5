"""Analytics (live charts with drill-down and the sampler's settings) and alert pages: open and recent alerts (the
bell's page), rules, channels with a test button."""

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from analytics import selectors, services
from analytics.choices import RANGES, Level
from analytics.forms import AnalyticsQuery, ChannelForm, RuleForm, SamplerForm
from analytics.models import Channel
from appliance.auth import requires
from appliance.choices import Role
from appliance.selectors import host_current
from appliance.web import add_service_errors, attempt, form_errors, saved_on_form


def analytics(request, *, status: int = 200, sampler_form=None):
    """Live charts for the current host; ?range=, ?chart=&by= breaks one chart down. htmx polls the charts while
    the page is visible (every sampling interval). sampler_form: the sampling settings as posted, refused, shown open
    with their errors."""
    host = host_current(request)
    query = AnalyticsQuery(request.GET)
    if not query.is_valid():
        messages.error(request, form_errors(query))
        return redirect("analytics")
    q = query.cleaned_data
    context = {
        "host": host,
        "range": q["range"],
        "focus": q["chart"],
        "by": q["by"],
        "ranges": RANGES.values(),
        "form": sampler_form or SamplerForm(initial=selectors.sampler_initial()),
        **(selectors.analytics(host, q["range"], q["chart"], q["by"]) if host else {}),
    }
    return render(
        request,
        "analytics/analytics.html#analytics-charts" if request.htmx else "analytics/analytics.html",
        context,
        status=status,
    )


@requires(write=Role.ADMIN)
@require_POST
def sampler_save(request):
    form = SamplerForm(request.POST)
    if saved_on_form(form, services.sampler_setting_save):
        messages.success(request, "Sampling settings saved.")
        return redirect("analytics")
    return analytics(request, status=400, sampler_form=form)


def alert_list(request, *, rule_form=None):
    """Open and recent alerts, channels and rules. rule_form: a rule's settings as posted and refused, shown again in
    its row as typed with each error under its field (400)."""
    key = rule_form.data.get("key") if rule_form is not None else None
    rules = []
    for rule, on in selectors.rules().values():
        form = rule_form if rule.key == key else None
        level = form["level"].value() if form else rule.level
        rules.append({"rule": rule, "on": form["enabled"].value() if form else on, "level": level, "form": form})
    context = {
        "open": selectors.open_alerts(),
        "cleared": selectors.recent_cleared(),
        "rules": rules,
        # a refusal no row can show (a key that names no rule)
        "rule_refused": form_errors(rule_form) if rule_form is not None and not any(r["form"] for r in rules) else "",
        "channels": list(Channel.objects.all()),
        "levels": Level.choices,
    }
    return render(request, "analytics/alert_list.html", context, status=200 if rule_form is None else 400)


@requires(write=Role.ADMIN)
@require_POST
def rule_save(request):
    form = RuleForm(request.POST)
    if saved_on_form(form, services.rule_save):
        messages.success(request, "Rule saved.")
        return redirect("alert-list")
    return alert_list(request, rule_form=form)


@requires(write=Role.ADMIN, read=Role.ADMIN)
@require_http_methods(["GET", "POST"])
def channel_edit(request, pk=None):
    channel = get_object_or_404(Channel, pk=pk) if pk else None
    form = ChannelForm(request.POST or None, instance=channel)
    if request.method == "POST" and form.is_valid():
        data = {k: form.cleaned_data[k] for k in ChannelForm.Meta.fields}
        try:
            saved = services.channel_save(data=data, pk=pk)
        except ValidationError as exc:
            add_service_errors(form, exc)  # on the field it names (smtp_password, url…)
        else:
            return redirect("channel-edit", pk=saved.pk)
    if form.is_bound:  # never echo a URL's credentials back into the page
        form.data = form.data.copy()
        form.data["url"] = services.without_credentials(form.data.get("url", ""))
    return render(request, "analytics/channel_form.html", {"form": form, "channel": channel})


@requires(write=Role.ADMIN)
@require_POST
def channel_test(request, pk):
    ok, result = services.channel_test(channel=get_object_or_404(Channel, pk=pk))
    (messages.success if ok else messages.error)(request, f"Test: {result}")
    return redirect("channel-edit", pk=pk)


@requires(write=Role.ADMIN)
@require_POST
def channel_delete(request, pk):
    channel = get_object_or_404(Channel, pk=pk)
    if attempt(request, services.channel_delete, channel=channel, confirm=request.POST.get("confirm", "")) is None:
        return redirect("channel-edit", pk=pk)
    return redirect("alert-list")
