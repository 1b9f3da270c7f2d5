"""Backups pages."""

from django.urls import path

from backups import views

urlpatterns = [
    path("", views.backup_list, name="backup-list"),
    path("now/", views.backup_now, name="backup-now"),
    path("schedule/", views.schedule_save, name="backup-schedule"),
    path("upload/", views.upload, name="backup-upload"),
    path("<int:pk>/", views.backup_detail, name="backup-detail"),
    path("<int:pk>/check/", views.check, name="backup-check"),
    path("<int:pk>/restore/", views.restore, name="backup-restore"),
    path("<int:pk>/delete/", views.delete, name="backup-delete"),
    path("<int:pk>/download/", views.download, name="backup-download"),
]
