"""Write an audit entry for every mutating request: who (and how: session or which API token), method, path,
the parameters with secrets masked (appliance.audit.redact: by what a value is; URLs down to scheme and host), the
status, the address, and the operation it started."""

import json

from appliance.audit.context import audit_begin, audit_end
from appliance.audit.redact import redact
from appliance.models import ApiToken, AuditEntry, User
from appliance.web import client_address

MUTATING = {"POST", "PUT", "PATCH", "DELETE"}
DROPPED = {"csrfmiddlewaretoken"}
MAX_BODY = 64 * 1024
MAX_PARAMS = 4000


def _params(request, body: bytes | None) -> dict | None:
    if body is not None:
        try:
            data = json.loads(body or b"null")
        except (ValueError, RecursionError):
            return {"_body": "not JSON"}
    elif not hasattr(request, "_post") and _length(request) > MAX_BODY:
        # a large body the view refused unread (a 10 GiB "backup"): reading it here would undo the refusal
        return {"_body": f"not read ({_length(request)} bytes)"}
    else:
        data = {k: (v if len(v) > 1 else v[0]) for k, v in request.POST.lists()}
    if not data:
        return None
    if isinstance(data, dict):
        data = {k: v for k, v in data.items() if k not in DROPPED}
    data = redact(data if isinstance(data, dict) else {"_body": data})
    text = json.dumps(data, default=str)
    return data if len(text) <= MAX_PARAMS else {"_truncated": text[:MAX_PARAMS]}


def _length(request) -> int:
    length = str(request.META.get("CONTENT_LENGTH") or "0")
    return int(length) if length.isdigit() else 0


def _who_tried(request) -> str:
    """The name a sign-in attempt is for: the one typed (the password step) or the one half signed in (the second
    step: a code or a passkey, appliance.twofactor_views)."""
    if request.path == "/login/":
        return request.POST.get("username", "")[:150]
    pending = request.session.get("tarn_2fa_pending") if request.path.startswith("/login/") else None
    if pending:
        return User.objects.filter(pk=pending.get("user")).values_list("username", flat=True).first() or ""
    return ""


class AuditRequestMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.method not in MUTATING:
            return self.get_response(request)
        body = None
        if request.content_type == "application/json" and _length(request) <= MAX_BODY:
            body = request.body  # read now, so the view's parser reads the same bytes from the cache
        started = audit_begin()
        try:
            response = self.get_response(request)
        finally:
            operations = audit_end(started)
        user = getattr(request, "user", None)
        authenticated = bool(user and user.is_authenticated)
        token = getattr(request, "auth", None)
        token = token if isinstance(token, ApiToken) else None
        username = user.username if authenticated else _who_tried(request)
        AuditEntry.objects.create(
            kind="request",
            user=user if authenticated else None,
            username=username,
            auth="token" if token else "session" if authenticated else "",
            token=token,
            method=request.method,
            path=request.path[:500],
            params=_params(request, body),
            status_code=response.status_code,
            address=client_address(request),
            operation=operations[0] if operations else None,
        )
        return response
