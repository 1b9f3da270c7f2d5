from django.urls import path

from benchmarks import views

urlpatterns = [path("", views.benchmark_list, name="benchmark-list")]
