"""Recovery pages."""

from django.urls import path

from recovery import views

urlpatterns = [
    path("", views.browse, name="recovery-browse"),
    path("versions/", views.file_versions, name="recovery-versions"),
    path("restore/", views.restore_page, name="recovery-restore"),
    path("download/", views.download, name="recovery-download"),
    path("changes/", views.changes, name="recovery-changes"),
    path("restores/<int:pk>/stop/", views.restore_stop, name="recovery-restore-stop"),
]
