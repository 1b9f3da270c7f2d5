"""The core's pages: log-in, the dashboard, hosts, operations, audit and the account."""

from django.contrib.auth import views as auth_views
from django.urls import path

from appliance import views
from appliance.auth import requires
from appliance.choices import Role

urlpatterns = [
    path("login/", views.login_view, name="login"),
    path("logout/", requires(write=Role.VIEWER)(auth_views.LogoutView.as_view()), name="logout"),
    path("healthz", views.healthz, name="healthz"),
    path("", views.dashboard, name="dashboard"),
    path("hosts/", views.host_list, name="host-list"),
    path("hosts/add/", views.host_add, name="host-add"),
    path("hosts/switch/", views.host_switch, name="host-switch"),
    path("hosts/<int:pk>/", views.host_detail, name="host-detail"),
    path("hosts/<int:pk>/probe/", views.host_probe, name="host-probe"),
    path("hosts/<int:pk>/remove/", views.host_remove, name="host-remove"),
    path("operations/", views.operation_list, name="operation-list"),
    path("operations/<int:pk>/", views.operation_detail, name="operation-detail"),
    path("audit/", views.audit_list, name="audit-list"),
    path("account/tokens/", views.token_list, name="token-list"),
    path("account/password/", views.password_change, name="password-change"),
    path("account/tokens/<int:pk>/revoke/", views.token_revoke, name="token-revoke"),
]
