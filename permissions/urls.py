from django.urls import path

from permissions import views

urlpatterns = [
    path("", views.permissions_page, name="permissions-page"),
    path("tree/", views.permissions_tree, name="permissions-tree"),
    path("effective/", views.permissions_effective, name="permissions-effective"),
    path("apply/", views.permissions_apply, name="permissions-apply"),
    path("walks/<int:pk>/", views.walk_detail, name="permissions-walk"),
    path("walks/<int:pk>/apply/", views.walk_apply, name="permissions-walk-apply"),
    path("walks/<int:pk>/stop/", views.walk_stop_view, name="permissions-walk-stop"),
    path("quotas/", views.quota_page, name="quota-page"),
    path("quotas.csv", views.quota_csv, name="quota-csv"),
    path("quotas/set/", views.quota_set, name="quota-set"),
    path("quotas/project/", views.quota_project, name="quota-project"),
    path("quotas/refresh/", views.quota_refresh, name="quota-refresh"),
]
