from django.urls import path

from benchmarks import views

urlpatterns = [
    path("", views.benchmark_list, name="benchmark-list"),
    path("runs/<int:pk>/", views.benchmark_run, name="benchmark-run"),
    path("runs/<int:pk>/results.csv", views.benchmark_results, {"fmt": "csv"}, name="benchmark-results-csv"),
    path("runs/<int:pk>/results.json", views.benchmark_results, {"fmt": "json"}, name="benchmark-results-json"),
    path("runs/<int:pk>/cancel/", views.benchmark_cancel, name="benchmark-cancel"),
    path("runs/<int:pk>/again/", views.benchmark_again, name="benchmark-again"),
    path("compare/", views.benchmark_compare, name="benchmark-compare"),
    path("suites/<int:pk>/", views.benchmark_suite, name="benchmark-suite"),
    path("profiles/", views.profile_list, name="benchmark-profiles"),
    path("profiles/copy/", views.profile_copy, name="benchmark-profile-copy"),
    path("profiles/<int:pk>/delete/", views.profile_delete, name="benchmark-profile-delete"),
    path("schedules/", views.schedule_list, name="benchmark-schedules"),
    path("schedules/<int:pk>/", views.schedule_detail, name="benchmark-schedule"),
    path("schedules/<int:pk>/delete/", views.schedule_delete, name="benchmark-schedule-delete"),
]
