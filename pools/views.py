"""Pools, datasets, snapshots and shares pages (management arrives with the storage and shares issues)."""

from django.shortcuts import render

from appliance.selectors import host_current


def pool_list(request):
    return render(
        request,
        "_not_built_yet.html",
        {
            "title": "Pools",
            "needs_zfs": True,
            "host": host_current(request),
            "what": "Pools, vdevs, datasets, zvols and snapshots of",
        },
    )


def share_list(request):
    return render(
        request,
        "_not_built_yet.html",
        {"title": "Shares", "needs_zfs": True, "host": host_current(request), "what": "SMB and NFS shares on"},
    )
