"""Encryption pages."""

from django.urls import path

from encryption import views

urlpatterns = [
    path("", views.encryption_list, name="encryption-list"),
    path("new/", views.create, name="encryption-create"),
    path("unlock/", views.unlock, name="encryption-unlock"),
    path("lock/", views.lock, name="encryption-lock"),
]
