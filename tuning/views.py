"""Base tuning pages (plan, apply, confirm or roll back arrive with the tuning issue)."""

from django.shortcuts import render

from appliance.selectors import host_current


def tuning_overview(request):
    return render(
        request,
        "_not_built_yet.html",
        {
            "title": "Tuning",
            "needs_zfs": True,
            "host": host_current(request),
            "what": "Base tuning (jumbo frames, TCP buffers, ZFS and Samba/NFS settings) for",
        },
    )
