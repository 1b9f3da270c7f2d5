"""The core's pages: log-in, the dashboard, hosts, operations, audit and the account."""

from django.contrib.auth import views as auth_views
from django.urls import path

from appliance import twofactor_views as tf
from appliance import views
from appliance.auth import requires
from appliance.choices import Role

urlpatterns = [
    path("login/", views.login_view, name="login"),
    path("logout/", requires(write=Role.VIEWER)(auth_views.LogoutView.as_view()), name="logout"),
    path("healthz", views.healthz, name="healthz"),
    path("favicon.ico", views.favicon, name="favicon"),
    path("", views.dashboard, name="dashboard"),
    path("hosts/", views.host_list, name="host-list"),
    path("fleet/", views.fleet, name="fleet"),
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
    path("login/verify/", tf.login_verify, name="login-verify"),
    path("login/passkey/options/", tf.login_passkey_options, name="login-passkey-options"),
    path("login/passkey/", tf.login_passkey, name="login-passkey"),
    path("account/two-factor/", tf.account, name="two-factor"),
    path("account/two-factor/totp/", tf.totp, name="two-factor-totp"),
    path("account/two-factor/recovery-codes/", tf.recovery_codes, name="two-factor-recovery"),
    path("account/two-factor/passkeys/options/", tf.passkey_options, name="two-factor-passkey-options"),
    path("account/two-factor/passkeys/", tf.passkey_add, name="two-factor-passkey-add"),
    path("account/two-factor/passkeys/<int:pk>/remove/", tf.passkey_remove, name="two-factor-passkey-remove"),
    path("account/two-factor/passkey-login/", tf.passkey_login, name="two-factor-passkey-login"),
    path("account/two-factor/confirm/", tf.confirm, name="two-factor-confirm"),
    path("account/two-factor/confirm/passkey/options/", tf.confirm_passkey_options, name="two-factor-confirm-options"),
    path("account/two-factor/confirm/passkey/", tf.confirm_passkey, name="two-factor-confirm-passkey"),
    path("account/two-factor/users/", tf.admin, name="two-factor-admin"),
    path("account/two-factor/policy/", tf.policy, name="two-factor-policy"),
    path("account/two-factor/users/<int:pk>/reset/", tf.reset, name="two-factor-reset"),
]
