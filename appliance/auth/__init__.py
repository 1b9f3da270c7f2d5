"""Login on every page and endpoint, and roles: admin, operator, viewer."""

from appliance.choices import Role

SAFE_METHODS = ("GET", "HEAD", "OPTIONS")


def requires(*, write: str = Role.OPERATOR, read: str = Role.VIEWER):
    """Declare the roles a view needs; LoginAndRoleMiddleware (HTML) and RolePermission (API) enforce it."""

    def mark(view):
        view.tarn_write_role, view.tarn_read_role = write, read
        return view

    return mark


def required_role(view, method: str) -> str:
    """The role a request with this method needs for this view (defaults: read viewer, write operator)."""
    owner = getattr(view, "cls", view)  # DRF's as_view() keeps the class on .cls
    if method in SAFE_METHODS:
        return getattr(view, "tarn_read_role", getattr(owner, "tarn_read_role", Role.VIEWER))
    return getattr(view, "tarn_write_role", getattr(owner, "tarn_write_role", Role.OPERATOR))
