"""Every HTML view requires login and the role it declares; the API is left to DRF (401, not a redirect).
A session unused for TARN_SESSION_IDLE_SECONDS ends. A page that needs a fresh second factor (appliance.auth.fresh)
sends the browser to the confirmation."""

import time
from urllib.parse import urlencode

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import logout
from django.contrib.auth.views import LogoutView, redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import HttpResponse
from django.shortcuts import redirect

from appliance import twofactor
from appliance.auth import required_role
from appliance.auth.fresh import CONFIRM, SAID, FreshFactorNeeded, back


class IdleSessionMiddleware:
    """Log out a session idle for too long. Activity is written at most once a minute (not a write per request)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.user.is_authenticated:
            now, seen = int(time.time()), request.session.get("seen_at")
            if seen and now - seen > settings.TARN_SESSION_IDLE_SECONDS:
                logout(request)
            elif not seen or now - seen > 60:
                request.session["seen_at"] = now
        return self.get_response(request)


class LoginAndRoleMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_view(self, request, view_func, view_args, view_kwargs):
        if not getattr(view_func, "login_required", True) or hasattr(view_func, "cls"):
            return None  # login page, static files; DRF views authenticate themselves
        user = request.user
        if not user.is_authenticated:
            if request.headers.get("HX-Request"):
                response = HttpResponse(status=401)
                response["HX-Redirect"] = f"/login/?next={request.path}"
                return response
            return redirect_to_login(request.get_full_path())
        if not user.has_role(required_role(view_func, request.method)):
            raise PermissionDenied("Your role does not allow this.")
        if _must_enrol(request, view_func):
            if request.headers.get("HX-Request"):
                response = HttpResponse(status=401)
                response["HX-Redirect"] = ENROL
                return response
            return redirect(ENROL)
        return None

    def process_exception(self, request, exception):
        if not isinstance(exception, FreshFactorNeeded):
            return None
        messages.error(request, SAID + " Confirm it here, then do it again.")
        where = f"{CONFIRM}?{urlencode({'next': back(request)})}"
        if request.headers.get("HX-Request"):
            response = HttpResponse(status=401)
            response["HX-Redirect"] = where
            return response
        return redirect(where)


ENROL = "/account/two-factor/"


def _must_enrol(request, view_func) -> bool:
    """A user whose role must have a second factor and who has none yet sees only the enrolment pages (and may log
    out). Once they have one (or signed in with one), the session says so and nothing is asked again."""
    if getattr(view_func, "tarn_enrolment", False) or getattr(view_func, "view_class", None) is LogoutView:
        return False
    return twofactor.enrolment_due(request)
