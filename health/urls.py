"""Disk health pages."""

from django.urls import path

from health import views

urlpatterns = [
    path("", views.health_list, name="health-list"),
    path("read/", views.health_read, name="health-read"),
    path("disks/<int:pk>/", views.disk_detail, name="health-disk"),
    path("disks/<int:pk>/self-test/", views.self_test, name="health-self-test"),
    path("disks/<int:pk>/abort/", views.self_test_abort, name="health-self-test-abort"),
    path("runs/new/", views.run_new, name="health-run-new"),
    path("runs/<int:pk>/cancel/", views.run_cancel, name="health-run-cancel"),
    path("schedules/new/", views.schedule_new, name="health-schedule-new"),
    path("schedules/<int:pk>/delete/", views.schedule_delete, name="health-schedule-delete"),
]
