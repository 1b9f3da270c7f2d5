"""Pools, datasets, snapshots and shares pages (management arrives with the storage and shares issues)."""

from django.shortcuts import render

from appliance.selectors import host_current


def pool_list(request):
    return render(request, "pools/pool_list.html", {"host": host_current(request)})


def share_list(request):
    return render(request, "pools/share_list.html", {"host": host_current(request)})
