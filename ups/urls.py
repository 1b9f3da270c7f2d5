"""UPS pages."""

from django.urls import path

from ups import views

urlpatterns = [
    path("", views.ups_page, name="ups-page"),
    path("save/", views.ups_save, name="ups-save"),
    path("remove/", views.ups_remove, name="ups-remove"),
]
