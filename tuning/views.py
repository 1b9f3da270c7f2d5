"""Base tuning pages (plan, apply, confirm or roll back arrive with the tuning issue)."""

from django.shortcuts import render

from appliance.selectors import host_current


def tuning_overview(request):
    return render(request, "tuning/tuning_overview.html", {"host": host_current(request)})
