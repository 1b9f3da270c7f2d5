from django.urls import path

from updates import views

urlpatterns = [
    path("", views.updates_page, name="updates-page"),
    path("check/", views.updates_check, name="updates-check"),
    path("apply/", views.updates_apply, name="updates-apply"),
    path("reboot/", views.updates_reboot, name="updates-reboot"),
    path("rollout/", views.updates_rollout, name="updates-rollout"),
]
