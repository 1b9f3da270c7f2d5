"""DRF permission: authenticated, and the role the view declares (see appliance.auth.requires)."""

from rest_framework.permissions import BasePermission

from appliance.auth import required_role


class RolePermission(BasePermission):
    message = "Your role does not allow this."

    def has_permission(self, request, view):
        user = request.user
        if not (user and user.is_authenticated):
            return False
        role = required_role(type(view), request.method)
        if hasattr(view, "get_required_role"):
            role = view.get_required_role(request) or role
        return user.has_role(role)
