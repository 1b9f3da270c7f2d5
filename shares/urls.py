from django.urls import path

from shares import views

urlpatterns = [
    path("", views.share_list, name="share-list"),
    path("smb/new/", views.smb_share_form, name="smb-share-create"),
    path("smb/<int:pk>/", views.smb_share_form, name="smb-share-edit"),
    path("smb/<int:pk>/delete/", views.smb_share_delete, name="smb-share-delete"),
    path("smb/<int:pk>/folder/", views.smb_share_folder, name="smb-share-folder"),
    path("nfs/new/", views.nfs_export_form, name="nfs-export-create"),
    path("nfs/<int:pk>/", views.nfs_export_form, name="nfs-export-edit"),
    path("nfs/<int:pk>/delete/", views.nfs_export_delete, name="nfs-export-delete"),
    path("settings/", views.share_settings, name="share-settings"),
    path("users/", views.samba_user, name="samba-user"),
    path("users/add/", views.samba_user_add, name="samba-user-add"),
    path("status/", views.share_status, name="share-status"),
]
