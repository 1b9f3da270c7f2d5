"""Capacity pages."""

from django.urls import path

from capacity import views

urlpatterns = [
    path("", views.forecast_list, name="capacity-list"),
    path("update/", views.forecast_update, name="capacity-update"),
    path("<int:pk>/", views.forecast_detail, name="capacity-detail"),
]
