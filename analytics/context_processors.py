"""The bell: how many alerts are open (one indexed count per page)."""

from analytics.selectors import open_count


def bell(request):
    if not getattr(request, "user", None) or not request.user.is_authenticated:
        return {}
    return {"open_alerts": open_count()}
