"""Write an audit entry for every mutating request: who, method, path, status, address. Never the body."""

from appliance.models import AuditEntry

MUTATING = {"POST", "PUT", "PATCH", "DELETE"}


class AuditRequestMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if request.method in MUTATING:
            user = getattr(request, "user", None)
            authenticated = bool(user and user.is_authenticated)
            username = (
                user.username
                if authenticated
                else request.POST.get("username", "")[:150]
                if request.path == "/login/"
                else ""
            )
            AuditEntry.objects.create(
                kind="request",
                user=user if authenticated else None,
                username=username,
                method=request.method,
                path=request.path[:500],
                status_code=response.status_code,
                address=request.META.get("REMOTE_ADDR"),
            )
        return response
