from django.urls import path

from tuning import views

urlpatterns = [path("", views.tuning_overview, name="tuning-overview")]
