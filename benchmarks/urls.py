from django.urls import path

from benchmarks import views

urlpatterns = [
    path("", views.benchmark_list, name="benchmark-list"),
    path("runs/<int:pk>/", views.benchmark_run, name="benchmark-run"),
    path("runs/<int:pk>/cancel/", views.benchmark_cancel, name="benchmark-cancel"),
    path("runs/<int:pk>/again/", views.benchmark_again, name="benchmark-again"),
    path("compare/", views.benchmark_compare, name="benchmark-compare"),
]
