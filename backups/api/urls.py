"""Backups API routes (mounted under /api/v1/)."""

from django.urls import path
from rest_framework.routers import SimpleRouter

from backups.api import views

router = SimpleRouter(trailing_slash=True)
router.register("config-backups", views.BackupViewSet, basename="config-backup")
urlpatterns = [
    path("config-backup-schedule/", views.BackupScheduleView.as_view(), name="config-backup-schedule"),
    *router.urls,
]
