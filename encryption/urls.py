"""Encryption pages."""

from django.urls import path

from encryption import views

urlpatterns = [
    path("", views.encryption_list, name="encryption-list"),
    path("new/", views.create, name="encryption-create"),
    path("unlock/", views.unlock, name="encryption-unlock"),
    path("lock/", views.lock, name="encryption-lock"),
    path("change-key/", views.change_key, name="encryption-change-key"),
    path("export/", views.export, name="encryption-export"),
    path("exports/<int:pk>/download/", views.export_download, name="encryption-export-download"),
    path("retired-keys/<int:pk>/remove/", views.retired_remove, name="encryption-retired-remove"),
]
