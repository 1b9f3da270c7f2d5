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
]
