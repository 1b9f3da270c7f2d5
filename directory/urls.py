from django.urls import path

from directory import views

urlpatterns = [
    path("", views.directory_page, name="directory-page"),
    path("join/", views.directory_join, name="directory-join"),
    path("leave/", views.directory_leave, name="directory-leave"),
    path("refresh/", views.directory_refresh, name="directory-refresh"),
    path("check/", views.directory_check, name="directory-check"),
    path("ldap/", views.directory_ldap, name="directory-ldap"),
    path("ldap/remove/", views.directory_ldap_remove, name="directory-ldap-remove"),
]
