"""Capacity pages: every pool's and dataset's forecast (full soonest first, paginated), one forecast with its chart,
and "forecast now" (an operator's: it reads only Tarn's own inventory)."""

from urllib.parse import urlencode

from django.contrib import messages
from django.core.cache import cache
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from appliance.selectors import host_current
from capacity import selectors, services
from capacity.choices import FIT_DAYS, MIN_HISTORY_HOURS
from capacity.forms import ForecastFilterForm
from capacity.models import Forecast

NOW_SECONDS = 60  # "Forecast now" at most once a minute a host (each reads every point of 30 days)


def forecast_list(request):
    host = host_current(request)
    search = ForecastFilterForm(request.GET)
    q, kind = (search.cleaned_data["q"], search.cleaned_data["kind"]) if search.is_valid() else ("", "")
    return render(
        request,
        "capacity/forecast_list.html",
        {
            "host": host,
            "page": selectors.forecast_page(host=host, page=request.GET.get("page"), q=q, kind=kind) if host else None,
            "q": q,
            "kind": kind,
            "search": search,
            "pager_query": urlencode({"kind": kind, "q": q}),
            "fit_days": FIT_DAYS,
            "min_hours": MIN_HISTORY_HOURS,
        },
    )


def forecast_detail(request, pk):
    host = host_current(request)
    row = get_object_or_404(Forecast, pk=pk, host=host)
    chart = selectors.chart(host=host, pool=row.pool, dataset=row.dataset, row=row)
    return render(request, "capacity/forecast_detail.html", {"host": host, "forecast": row, "chart": chart})


@require_POST
def forecast_update(request):
    host = host_current(request)
    if host is not None and not cache.add(f"tarn:capacity:now:{host.pk}", 1, NOW_SECONDS):
        messages.info(request, f"{host.name}'s forecasts were made less than a minute ago.")
    elif host is not None:
        made = services.capacity_update(host=host)
        messages.success(request, f"{len(made)} forecast(s) made again from {host.name}'s inventory.")
    return redirect("capacity-list")
