"""Updates API routes (mounted under /api/v1/)."""

from django.urls import path

from updates.api import views

urlpatterns = [
    path("hosts/<int:pk>/updates/", views.HostUpdatesView.as_view(), name="host-updates"),
    path("hosts/<int:pk>/updates/check/", views.HostUpdatesCheckView.as_view(), name="host-updates-check"),
    path("hosts/<int:pk>/updates/apply/", views.HostUpdatesApplyView.as_view(), name="host-updates-apply"),
    path("hosts/<int:pk>/updates/reboot/", views.HostRebootView.as_view(), name="host-updates-reboot"),
    path("updates/rollout/", views.RolloutView.as_view(), name="updates-rollout"),
]
