"""DRF permission: authenticated, and the role the view declares (see appliance.auth.requires)."""

from rest_framework.permissions import BasePermission

from appliance import twofactor
from appliance.auth import required_role
from appliance.models import ApiToken


class RolePermission(BasePermission):
    message = "Your role does not allow this."

    def has_permission(self, request, view):
        user = request.user
        if not (user and user.is_authenticated):
            return False
        if not isinstance(request.auth, ApiToken) and twofactor.enrolment_due(request):
            self.message = "Set up a second factor first (Account → Two-factor): your role requires one."
            return False  # a browser session of such a user reaches no API either (a token is its own secret)
        role = required_role(type(view), request.method)
        if hasattr(view, "get_required_role"):
            role = view.get_required_role(request) or role
        return user.has_role(role)
