"""iSCSI pages."""

from django.urls import path

from iscsi import views

urlpatterns = [
    path("", views.iscsi_page, name="iscsi-page"),
    path("targets/", views.target_save, name="iscsi-target-save"),
    path("targets/<int:pk>/delete/", views.target_delete, name="iscsi-target-delete"),
    path("luns/", views.lun_add, name="iscsi-lun-add"),
    path("luns/<int:pk>/remove/", views.lun_remove, name="iscsi-lun-remove"),
    path("initiators/", views.initiator_save, name="iscsi-initiator-save"),
    path("initiators/<int:pk>/remove/", views.initiator_remove, name="iscsi-initiator-remove"),
    path("sessions/", views.sessions_read, name="iscsi-sessions"),
]
