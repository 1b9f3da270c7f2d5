"""A fresh proof that it is the user, before a secret step (a backup and its download, a restore, a key export, a
second factor changed, an API token made): a second factor given within the last five minutes, or the password for
a user who has none. A stolen session cookie alone then reaches none of them.

One guard for pages and API alike: `require_fresh(request)` (or the `@fresh_factor` decorator) raises
FreshFactorNeeded. DRF answers it with a 403 naming what to do; for a page, LoginAndRoleMiddleware sends the browser
to the confirmation, which comes back here (a GET) or to the page the form was on (a POST, to be sent again).
An API request made with a token passes: a token is made only with a fresh factor and is a secret of its own, kept
by a script that cannot type a code (as GitHub's sudo mode spares personal access tokens); a session's API request
needs the confirmation as its pages do."""

import functools
import time
from urllib.parse import urlsplit

from django.http import HttpRequest
from rest_framework.exceptions import PermissionDenied

from appliance.models import ApiToken

FRESH = "tarn_fresh_at"  # session: when this session last gave a second factor (or, with none, the password)
FRESH_SECONDS = 300
CONFIRM = "/account/two-factor/confirm/"
SAID = (
    "This needs a fresh confirmation that it is you: your second factor (or, if you have none, your password) given "
    "within the last five minutes."
)
API_SAID = SAID + f" Confirm at {CONFIRM} in this session, or use an API token (made with a fresh factor)."


class FreshFactorNeeded(PermissionDenied):
    default_detail = API_SAID


def mark_fresh(request) -> None:
    """The user just gave a second factor (or their password, having none)."""
    request.session[FRESH] = time.time()


def is_fresh(request) -> bool:
    if isinstance(getattr(request, "auth", None), ApiToken):
        return True
    at = request.session.get(FRESH)
    return isinstance(at, float | int) and 0 <= time.time() - at <= FRESH_SECONDS


def require_fresh(request) -> None:
    if not is_fresh(request):
        raise FreshFactorNeeded()


def fresh_factor(view):
    """Decorator for a page's view function or an API view's method: it runs only with a fresh proof."""

    @functools.wraps(view)
    def guarded(*args, **kwargs):
        require_fresh(args[0] if isinstance(args[0], HttpRequest) else args[1])
        return view(*args, **kwargs)

    return guarded


def back(request) -> str:
    """Where the confirmation returns to: a GET comes back to itself (a download then starts); a POST's data is not
    kept, so the page its form was on, to send it again."""
    if request.method == "GET":
        return request.get_full_path()
    referer = urlsplit(request.headers.get("Referer", ""))
    if referer.netloc == request.get_host() and referer.path.startswith("/"):
        return referer.path + (f"?{referer.query}" if referer.query else "")
    return "/"
