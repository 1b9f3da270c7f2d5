"""Recovery pages."""

from django.urls import path

from recovery import views

urlpatterns = [
    path("", views.browse, name="recovery-browse"),
    path("versions/", views.file_versions, name="recovery-versions"),
]
